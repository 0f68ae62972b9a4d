// observe.h — calling a state's observer (normlab.h NlObserver) from the forward passes: each call
// is skipped, with no clock read, when its group is off.
#ifndef NL_OBSERVE_H
#define NL_OBSERVE_H

#include "normlab.h"
#include "normlab_internal.h"

static inline double nl_obs_begin(const NlObserver *o) { return o->timer ? o->begin(o->timer) : 0.0; }

static inline void nl_obs_record(const NlObserver *o, double begin, int layer, NlComponent comp, size_t batch, size_t n,
                                 size_t ctx) {
    if (o->timer) o->record(o->timer, begin, layer, comp, batch, n, ctx);
}

static inline void nl_obs_record_layer(const NlObserver *o, double begin, int layer) {
    if (o->timer) o->record_layer(o->timer, begin, layer);
}

static inline void nl_obs_add_wall(const NlObserver *o, double begin) {
    if (o->timer) o->add_wall(o->timer, begin);
}

static inline void nl_obs_set_phase(const NlObserver *o, NlPhase phase) {
    if (o->timer) o->set_phase(o->timer, phase);
}

// Runs stmt as one call of component comp (layer l, B sequences of n positions, ctx), timed when a
// timer is attached.
#define NL_TIMED(obs, l, comp, B, n, ctx, stmt)            \
    do {                                                   \
        double t_ = nl_obs_begin(obs);                     \
        stmt;                                              \
        nl_obs_record(obs, t_, (int)(l), comp, B, n, ctx); \
    } while (0)

#endif
