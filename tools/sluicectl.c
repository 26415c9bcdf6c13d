/*
 * sluicectl -- the operators' command-line tool. It talks to a running
 * sluiced over its APIs, signing with SigV4 like any SQS client.
 * (Commands arrive with the admin API and the DLQ redrive work.)
 */
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: sluicectl <command> [options]\n"
                 "commands:\n"
                 "  version     print the version\n");
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "version") == 0) {
        printf("sluicectl 0.1.0\n");
        return 0;
    }
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return 2;
}
