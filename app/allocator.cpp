#include "app/allocator.hpp"

#include <cstdlib>

#ifdef SHARDSCOPE_HAVE_MIMALLOC
#include <mimalloc.h>
#endif

namespace shardscope::app {

std::string allocator_name() {
#ifdef SHARDSCOPE_HAVE_MIMALLOC
    // Linking libmimalloc puts its malloc ahead of glibc's. A block from plain calloc that
    // mimalloc owns shows the override took (a linker that dropped the library would not).
    void* block = std::calloc(1, 16);
    const bool served = mi_is_in_heap_region(block);
    std::free(block);
    if (served) {
        const int v = mi_version(); // 209 = 2.0.9
        return "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." +
               std::to_string(v % 10);
    }
#endif
    return "glibc malloc";
}

} // namespace shardscope::app
