#ifndef C_TEST_RUN_WIDTH_H
#define C_TEST_RUN_WIDTH_H

/// How many test cases Swift Testing runs at once in this process: set before the testing
/// library reads its environment (see width.c); 0 when the constructor did not run.
int notty_test_run_width(void);

#endif
