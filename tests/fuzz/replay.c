// replay.c — a main() for the fuzz harnesses without libFuzzer: runs LLVMFuzzerTestOneInput on
// every file named on the command line (the corpus and the saved crashes), so `make test` replays
// them under the gcc sanitizer build.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
    int n = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "replay: cannot open %s\n", argv[i]);
            return 1;
        }
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc((size_t)len + 1);
        if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
            fprintf(stderr, "replay: cannot read %s\n", argv[i]);
            return 1;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t)len);
        free(buf);
        n++;
    }
    printf("replayed %d inputs\n", n);
    return 0;
}
