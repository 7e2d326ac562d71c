#include "app/allocator.hpp"

#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <new>

#ifdef SHARDSCOPE_HAVE_MIMALLOC
#include <mimalloc.h>
#endif

namespace {

// Set when our operator new is about to throw std::bad_alloc: under a limit so small that even
// the exception cannot be allocated (libstdc++'s emergency pool is malloc'ed at start-up, and
// fails too), the throw itself calls std::terminate with no exception.
std::atomic<bool> allocation_failed{false};

} // namespace

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

namespace {

std::terminate_handler previous_terminate = nullptr;

[[noreturn]] void report_out_of_memory_and_exit() {
    // No allocation here: a literal, written straight to the descriptor.
    static const char message[] =
        "shardscope: error: out of memory (an allocation failed; under a memory limit such as "
        "ulimit -v, raise it, or give smaller input)\n";
    const ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
    (void)ignored;
    _exit(2); // kExitUsage: the host cannot run it
}

[[noreturn]] void on_terminate() {
    if (const auto e = std::current_exception()) {
        try {
            std::rethrow_exception(e);
        } catch (const std::bad_alloc&) {
            report_out_of_memory_and_exit();
        } catch (...) {
        }
    } else if (allocation_failed.load()) {
        report_out_of_memory_and_exit();
    }
    if (previous_terminate) previous_terminate();
    std::abort();
}

} // namespace

void install_out_of_memory_handling() {
    const std::terminate_handler previous = std::set_terminate(on_terminate);
    if (previous != on_terminate) previous_terminate = previous;
}

} // namespace shardscope::app

#ifdef SHARDSCOPE_HAVE_MIMALLOC
// The throwing forms of operator new, replaced in the executable: libmimalloc's (mi_new) calls
// abort() when an allocation fails, since the std::get_new_handler it would ask is a hidden weak
// stub in the library that always answers "none" (C cannot throw). These call mimalloc (mi_malloc;
// malloc is mimalloc's too) and where that fails do what the standard asks: the new-handler, else
// std::bad_alloc. The nothrow forms and every operator delete stay mimalloc's.
namespace {

/// An allocation that failed once (or needs more than malloc's alignment): the standard's loop
/// of new-handler calls, out of the hot path.
[[gnu::noinline]] void* allocate_slow(std::size_t size, std::size_t alignment) {
    if (size == 0) size = 1;
    for (;;) {
        void* p = nullptr;
        if (alignment <= alignof(std::max_align_t)) {
            p = std::malloc(size);
        } else if (posix_memalign(&p, alignment, size) != 0) {
            p = nullptr;
        }
        if (p) return p;
        const std::new_handler handler = std::get_new_handler();
        if (!handler) {
            allocation_failed.store(true);
            throw std::bad_alloc();
        }
        handler();
    }
}

/// The common case, one call into mimalloc (every statement the checker plans allocates a few
/// hundred blocks: the fast path is a measurable part of a check).
inline void* allocate(std::size_t size) {
    if (void* p = mi_malloc(size == 0 ? 1 : size)) [[likely]]
        return p;
    return allocate_slow(size, 0);
}

} // namespace

void* operator new(std::size_t size) {
    return allocate(size);
}
void* operator new[](std::size_t size) {
    return allocate(size);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
    return allocate_slow(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
    return allocate_slow(size, static_cast<std::size_t>(alignment));
}
#endif
