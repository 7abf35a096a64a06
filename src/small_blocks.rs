//! A cache of freed small memory blocks in front of the system allocator,
//! used as the global allocator of the Wasm module.
//!
//! One evaluation allocates and frees about two hundred small blocks (JSON
//! tree nodes, keys, short strings). In Wasm the system allocator is
//! wasi-libc's dlmalloc, and its `malloc` and `free` took a sixth of the
//! guest's time per evaluation (perf, `e2e-tests/examples/profile.rs`);
//! natively, glibc's per-thread cache makes the same calls cheap. This cache
//! works like glibc's: a freed block of up to [`LARGEST_CACHED`] bytes goes
//! on the free list of its size class, and the next allocation of that class
//! takes it back in a few instructions. Larger or over-aligned requests go to
//! the system allocator as they are.
//!
//! Cached blocks are never handed back to the system allocator, so they
//! cannot serve a larger request: an instance holds at most the peak of its
//! small blocks plus the peak of its large ones (Wasm memory never shrinks
//! anyway). policy-server creates an instance per request; a long-lived one
//! (kwctl, the harness) reuses the same blocks request after request.
//!
//! The Wasm module runs single-threaded (`wasm32-wasip1` has no threads), so
//! the lists need no lock; [`SmallBlocks`] is `Sync` only on such a target.
//! The tests below also pass under Miri
//! (`cargo +nightly miri test --lib small_blocks`), which checks the
//! pointer handling for undefined behaviour.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr;

/// Size classes are this many bytes apart; class `k` holds blocks of
/// `(k + 1) * CLASS_STEP` bytes.
const CLASS_STEP: usize = 16;
/// The largest request served from the cache: a JSON object's tree node
/// (about 400 bytes in Wasm) fits.
const LARGEST_CACHED: usize = 512;
const CLASSES: usize = LARGEST_CACHED / CLASS_STEP;
/// Blocks are allocated with this alignment; requests that need more go to
/// the system allocator. Nothing the policy allocates needs more.
const BLOCK_ALIGN: usize = 8;

/// A freed block, linked into its class's free list.
struct FreeBlock {
    next: *mut FreeBlock,
}

/// The free lists, one per size class.
pub struct SmallBlocks {
    free: UnsafeCell<[*mut FreeBlock; CLASSES]>,
}

impl SmallBlocks {
    pub const fn new() -> Self {
        SmallBlocks {
            free: UnsafeCell::new([ptr::null_mut(); CLASSES]),
        }
    }
}

/// Hands the cached blocks back (the global allocator is never dropped; a
/// local one, in tests, is).
impl Drop for SmallBlocks {
    fn drop(&mut self) {
        for (class, head) in self.free.get_mut().iter_mut().enumerate() {
            while !head.is_null() {
                let block = *head;
                // SAFETY: every listed block came from the system allocator
                // with its class's layout and is unused.
                unsafe {
                    *head = (*block).next;
                    System.dealloc(block.cast(), class_layout(class));
                }
            }
        }
    }
}

impl Default for SmallBlocks {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: single-threaded Wasm (no `atomics` target feature) has one thread,
// so the lists are never touched concurrently.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
unsafe impl Sync for SmallBlocks {}

/// The size class serving `layout`, if the cache serves it.
fn class_of(layout: Layout) -> Option<usize> {
    let size = layout.size();
    (size != 0 && size <= LARGEST_CACHED && layout.align() <= BLOCK_ALIGN)
        .then(|| (size - 1) / CLASS_STEP)
}

/// The layout of the blocks of `class` (below [`CLASSES`]), as the system
/// allocator is asked.
fn class_layout(class: usize) -> Layout {
    debug_assert!(class < CLASSES);
    // SAFETY: a size of at most LARGEST_CACHED bytes, far from overflowing
    // when rounded up to BLOCK_ALIGN, a power of two.
    unsafe { Layout::from_size_align_unchecked((class + 1) * CLASS_STEP, BLOCK_ALIGN) }
}

unsafe impl GlobalAlloc for SmallBlocks {
    // Not inlined: inlined at every allocation site, these three added
    // ~40 KB to the module for ~1.5% speed.
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            return System.alloc(layout);
        };
        // SAFETY: only this thread touches the lists (see `Sync`), and no
        // reference into them outlives this call.
        let head = &mut (*self.free.get())[class];
        let block = *head;
        if block.is_null() {
            return System.alloc(class_layout(class));
        }
        *head = (*block).next;
        block.cast()
    }

    #[inline(never)] // as `alloc`
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(class) = class_of(layout) else {
            return System.dealloc(ptr, layout);
        };
        // SAFETY: `ptr` is a block of `class` (allocated above for a layout
        // of the same class), at least CLASS_STEP bytes and 8-aligned, so it
        // can hold the link.
        let block: *mut FreeBlock = ptr.cast();
        let head = &mut (*self.free.get())[class];
        (*block).next = *head;
        *head = block;
    }

    #[inline(never)] // as `alloc`
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees a valid power-of-two alignment.
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        match (class_of(layout), class_of(new_layout)) {
            // The block already has room.
            (Some(old), Some(new)) if old == new => ptr,
            // Both outside the cache: the system allocator may grow in place.
            (None, None) => System.realloc(ptr, layout, new_size),
            _ => {
                let moved = self.alloc(new_layout);
                if !moved.is_null() {
                    ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                moved
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// A block of `layout` from `blocks`, filled with `fill`.
    fn filled(blocks: &SmallBlocks, layout: Layout, fill: u8) -> *mut u8 {
        // SAFETY: a non-zero size; the block is written within its size.
        unsafe {
            let block = blocks.alloc(layout);
            assert!(!block.is_null(), "allocating {layout:?}");
            assert_eq!(block as usize % layout.align(), 0, "{layout:?} misaligned");
            block.write_bytes(fill, layout.size());
            block
        }
    }

    fn holds(block: *const u8, size: usize, fill: u8) -> bool {
        // SAFETY: callers pass a live block of at least `size` bytes.
        unsafe { std::slice::from_raw_parts(block, size) }
            .iter()
            .all(|byte| *byte == fill)
    }

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[rstest]
    #[case::one_byte(1, 1, Some(0))]
    #[case::a_whole_first_class(16, 8, Some(0))]
    #[case::one_byte_into_the_second_class(17, 4, Some(1))]
    #[case::the_largest_cached(LARGEST_CACHED, 8, Some(CLASSES - 1))]
    #[case::one_byte_too_large(LARGEST_CACHED + 1, 1, None)]
    #[case::over_aligned(16, 16, None)]
    #[case::empty(0, 1, None)]
    fn requests_map_to_size_classes(
        #[case] size: usize,
        #[case] align: usize,
        #[case] class: Option<usize>,
    ) {
        assert_eq!(class_of(layout(size, align)), class);
    }

    #[test]
    fn a_freed_block_serves_the_next_request_of_its_class() {
        let blocks = SmallBlocks::new();
        let first = filled(&blocks, layout(24, 8), 1);
        // SAFETY: `first` is live and of this layout.
        unsafe { blocks.dealloc(first, layout(24, 8)) };
        let again = filled(&blocks, layout(30, 2), 2);
        assert_eq!(again, first, "same class (17-32 bytes): the cached block");
        let other = filled(&blocks, layout(24, 8), 3);
        assert_ne!(other, first, "the cached block is in use");
        assert!(holds(again, 30, 2));
        // SAFETY: both are live and of these layouts.
        unsafe {
            blocks.dealloc(again, layout(30, 2));
            blocks.dealloc(other, layout(24, 8));
        }
    }

    #[test]
    fn a_freed_block_is_not_handed_to_another_class() {
        let blocks = SmallBlocks::new();
        let small = filled(&blocks, layout(24, 8), 1);
        // SAFETY: `small` is live and of this layout.
        unsafe { blocks.dealloc(small, layout(24, 8)) };
        let larger = filled(&blocks, layout(40, 8), 2);
        assert_ne!(larger, small);
        // SAFETY: `larger` is live and of this layout.
        unsafe { blocks.dealloc(larger, layout(40, 8)) };
    }

    #[rstest]
    #[case::within_its_class(20, 31)]
    #[case::into_a_larger_class(20, 200)]
    #[case::from_cached_to_system(100, 4096)]
    #[case::from_system_to_cached(4096, 100)]
    #[case::within_the_system(4096, 8192)]
    #[case::shrinking_within_the_system(8192, 1024)]
    fn realloc_keeps_the_contents(#[case] from: usize, #[case] to: usize) {
        let blocks = SmallBlocks::new();
        let old = filled(&blocks, layout(from, 8), 7);
        // SAFETY: `old` is live and of this layout; `to` is non-zero.
        let new = unsafe { blocks.realloc(old, layout(from, 8), to) };
        assert!(!new.is_null());
        assert!(holds(new, from.min(to), 7));
        if class_of(layout(from, 8)).is_some()
            && class_of(layout(from, 8)) == class_of(layout(to, 8))
        {
            assert_eq!(new, old, "room in the block: not moved");
        }
        // SAFETY: `new` is live, now of the new size.
        unsafe { blocks.dealloc(new, layout(to, 8)) };
    }

    /// Many interleaved allocations, frees and reallocs of assorted sizes and
    /// alignments: every live block keeps its own bytes, so no two live
    /// blocks ever overlap.
    #[test]
    fn live_blocks_never_overlap() {
        const LIVE: usize = 64;
        const STEPS: usize = if cfg!(miri) { 2_000 } else { 20_000 };
        let blocks = SmallBlocks::new();
        let mut live: Vec<Option<(*mut u8, Layout, u8)>> = vec![None; LIVE];
        // xorshift: deterministic, no dependency.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for step in 0..STEPS {
            let random = next();
            let slot = (random % LIVE as u64) as usize;
            let size = 1 + (random >> 8) as usize % (2 * LARGEST_CACHED);
            let align = 1 << ((random >> 24) % 5);
            let fill = step as u8;
            match live[slot].take() {
                None => {
                    live[slot] = Some((
                        filled(&blocks, layout(size, align), fill),
                        layout(size, align),
                        fill,
                    ))
                }
                Some((block, old, old_fill)) => {
                    assert!(
                        holds(block, old.size(), old_fill),
                        "step {step}: block overwritten"
                    );
                    if random >> 40 & 1 == 0 {
                        // SAFETY: `block` is live and of layout `old`.
                        unsafe { blocks.dealloc(block, old) };
                    } else {
                        // SAFETY: as above; `size` is non-zero.
                        let moved = unsafe { blocks.realloc(block, old, size) };
                        assert!(
                            holds(moved, old.size().min(size), old_fill),
                            "step {step}: realloc lost bytes"
                        );
                        let new = layout(size, old.align());
                        // SAFETY: `moved` is live, of layout `new`.
                        unsafe { moved.write_bytes(fill, size) };
                        live[slot] = Some((moved, new, fill));
                    }
                }
            }
        }
        for (block, layout, fill) in live.into_iter().flatten() {
            assert!(holds(block, layout.size(), fill));
            // SAFETY: `block` is live and of `layout`.
            unsafe { blocks.dealloc(block, layout) };
        }
    }
}
