//! The bytes the bridge holds allocated (its live heap), counted by a global allocator around
//! the system's. A leak grows this; RSS also counts freed memory the allocator keeps for
//! later (after a burst, glibc holds several times the live heap), so RSS alone cannot tell a
//! leak from a high-water mark. Exported as `bridge_heap_bytes`; docs/HARDENING.md, "The soak".

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting the bytes allocated and not yet freed. The daemon installs
/// it (`src/main.rs`); a program that uses the library without it reads no heap figure.
pub struct Counting;

// SAFETY: every method hands the call to `System` unchanged and only counts sizes on the side;
// the counter is never read to decide anything about memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `layout` are passed on as they are.
        counted(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        counted(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator, with this `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc` for `ptr` and `layout`; `new_size` is the caller's, unchanged.
        let p = counted(unsafe { System.realloc(ptr, layout, new_size) }, new_size);
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

/// `p`, with its `size` bytes counted if the allocation succeeded.
fn counted(p: *mut u8, size: usize) -> *mut u8 {
    if !p.is_null() {
        LIVE.fetch_add(size, Ordering::Relaxed);
    }
    p
}

/// Bytes allocated and not freed; `None` when [`Counting`] is not the global allocator.
pub fn live_bytes() -> Option<usize> {
    Some(LIVE.load(Ordering::Relaxed)).filter(|n| *n > 0)
}
