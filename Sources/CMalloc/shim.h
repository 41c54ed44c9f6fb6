// glibc's allocator statistics (mallinfo2), which Swift's Glibc module does not export: the process metrics tell
// memory the program holds from memory the allocator keeps after it was freed.
#include <malloc.h>
