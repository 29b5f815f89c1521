//! Counts heap allocations (and bytes allocated) per operation of each
//! benchmark workload: allocator traffic is a large part of the per-call
//! cost, and this shows where a change moves it.
//!
//!   cargo run --release -p genkit-bench --bin allocs

use genkit_bench::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: delegates to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const N: u64 = 1000;

async fn count<F, Fut>(name: &str, mut op: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future,
{
    for _ in 0..100 {
        op().await;
    }
    let (a0, b0) = (
        ALLOCS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    );
    for _ in 0..N {
        op().await;
    }
    let (a1, b1) = (
        ALLOCS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    );
    println!(
        "{name:16} {:8.1} allocations/op {:10.0} bytes/op",
        (a1 - a0) as f64 / N as f64,
        (b1 - b0) as f64 / N as f64
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let ai = flow_echo();
    count("flow_echo", || call_flow_echo(&ai)).await;
    let ai = generate_plain();
    count("generate_plain", || call_generate_plain(&ai)).await;
    let (ai, a, b) = generate_tools();
    count("generate_tools", || call_generate_tools(&ai, &a, &b)).await;
    let ai = generate_stream();
    count("generate_stream", || call_generate_stream(&ai)).await;
    let (_ai, agent) = agent_assistant();
    count("agent_turn", || call_agent_turn(&agent)).await;
    // Per session of AGENT_SESSION_TURNS turns (divide for a turn).
    count("agent_session_50", || call_agent_session(&agent)).await;
}
