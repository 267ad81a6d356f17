// glibc functions that Swift's Glibc module leaves out (malloc.h, sys/auxv.h, and the
// pseudo-terminal calls that need _XOPEN_SOURCE), declared here as glibc declares them.
#ifndef NOTTY_CPOSIX_SHIM_H
#define NOTTY_CPOSIX_SHIM_H

#include <stddef.h>

// Gives the heap's free pages at its top back to the system (malloc.h).
int malloc_trim(size_t pad);
// Sets a malloc parameter (malloc.h): M_ARENA_MAX (-8), how many arenas threads share.
int mallopt(int param, int value);
// A value of the auxiliary vector the kernel gave the process (sys/auxv.h): AT_PHDR, AT_PHNUM.
unsigned long getauxval(unsigned long type);
// Pseudo-terminals (stdlib.h with _XOPEN_SOURCE).
int posix_openpt(int flags);
int grantpt(int fd);
int unlockpt(int fd);
int ptsname_r(int fd, char *buf, size_t buflen);

#endif
