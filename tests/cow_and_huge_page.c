/* A process that shares 511 pages with its child (copy-on-write) and, on the second line on its
 * stdin, writes them (each write a fault that maps no new page) and faults one huge page (one
 * fault, 512 pages): tests/test_private_growth.py.  The first line makes it fault one page. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#define HUGE (2UL << 20)

int main(void)
{
    long page = sysconf(_SC_PAGESIZE), shared = HUGE / page - 1, i;
    static char line[64];
    char *cow = mmap(NULL, shared * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *area = mmap(NULL, 2 * HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *huge = (char *)(((uintptr_t)area + HUGE - 1) & ~(HUGE - 1));
    pid_t parent = getpid();

    if (cow == MAP_FAILED || area == MAP_FAILED || madvise(huge, HUGE, MADV_HUGEPAGE))
        return 1;
    madvise(cow, shared * page, MADV_NOHUGEPAGE);
    for (i = 0; i < shared; i++)
        cow[i * page] = 1;
    if (fork() == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(0);
        for (;;)
            pause();
    }
    printf("ready\n");
    fflush(stdout);
    if (read(0, line, sizeof line) <= 0)
        return 0;
    area[2 * HUGE - page] = 1;  /* (a page of its own: it moved, and is walked) */
    printf("grown\n");
    fflush(stdout);
    if (read(0, line, sizeof line) <= 0)
        return 0;
    for (i = 0; i < shared; i++)
        cow[i * page] = 2;
    huge[0] = 1;
    printf("done\n");
    fflush(stdout);
    while (read(0, line, sizeof line) > 0)
        ;
    return 0;
}
