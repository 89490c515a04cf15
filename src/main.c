/* main.c — entry point: options → run → exit status. The only place that exits. */
#include "log.h"

int main(int argc, char **argv)
{
    log_set_program(argv[0]);
    return 125;
}
