// Bounds how many test cases Swift Testing runs at once in the test bundle.
//
// Swift Testing starts every test at once unless SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH
// says otherwise. notty's end-to-end tests each start real processes (notty serve, PostgreSQL,
// tmux, Chromium): all ~570 at once on two cores left some waiting a minute for a socket, and
// they failed on load, not on a defect. Four test cases a core keeps the cores busy (most tests
// wait on processes) without that pile-up. The variable is set here, in a constructor that runs
// before `main`, so that `swift test` alone (README's command, CI's command) runs bounded; a
// width already in the environment wins (SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=1 runs
// one at a time).
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "CTestRunWidth.h"

static int chosen_width = 0;

__attribute__((constructor)) static void notty_bound_test_run_width(void) {
    const char *name = "SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH";
    const char *given = getenv(name);
    if (given != NULL && given[0] != '\0') {
        chosen_width = atoi(given);
        return;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int width = (int)(cores > 0 ? cores : 1) * 4;
    if (width < 4) width = 4;
    char text[16];
    snprintf(text, sizeof text, "%d", width);
    setenv(name, text, 0);
    chosen_width = width;
}

int notty_test_run_width(void) { return chosen_width; }
