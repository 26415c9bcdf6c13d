/*
 * sluiced.c -- the gateway process. Everything lives in the gateway
 * library (gw_main) so that tests can run the same code in-process.
 */
#include "gw.h"

int main(int argc, char **argv)
{
    return gw_main(argc, argv);
}
