//! Counts heap allocations (and bytes allocated) per operation of each
//! benchmark workload: allocator traffic is a large part of the per-call
//! cost, and this shows where a change moves it.
//!
//!   cargo run --release -p genkit-bench --bin allocs [-- --exporter] [bench]
//!
//! Counts what the benchmark's own thread allocates: with `--exporter` the
//! telemetry exporter is installed and its worker's allocations (encoding
//! the spans) are left out, so the figure is the request path's.

use genkit_bench::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    // Per thread, so the exporter's worker is not counted; const-initialized
    // cells with no destructor, safe to touch from inside the allocator.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
}

fn note(bytes: usize) {
    // `try_with` fails only while the thread is being torn down.
    let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
    let _ = BYTES.try_with(|b| b.set(b.get() + bytes as u64));
}

fn counts() -> (u64, u64) {
    (ALLOCS.with(Cell::get), BYTES.with(Cell::get))
}

// SAFETY: delegates to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
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
    let (a0, b0) = counts();
    for _ in 0..N {
        op().await;
    }
    let (a1, b1) = counts();
    println!(
        "{name:16} {:8.1} allocations/op {:10.0} bytes/op",
        (a1 - a0) as f64 / N as f64,
        (b1 - b0) as f64 / N as f64
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut only = None;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--exporter" => install_exporter(),
            name if !name.starts_with('-') => only = Some(name.to_owned()),
            other => {
                eprintln!("unknown option {other}; usage: allocs [--exporter] [bench]");
                std::process::exit(2);
            }
        }
    }
    let run = |name: &str| only.as_deref().is_none_or(|o| o == name);
    if run("flow_echo") {
        let ai = flow_echo();
        count("flow_echo", || call_flow_echo(&ai)).await;
    }
    if run("generate_plain") {
        let ai = generate_plain();
        count("generate_plain", || call_generate_plain(&ai)).await;
    }
    if run("generate_tools") {
        let (ai, a, b) = generate_tools();
        count("generate_tools", || call_generate_tools(&ai, &a, &b)).await;
    }
    if run("generate_stream") {
        let ai = generate_stream();
        count("generate_stream", || call_generate_stream(&ai)).await;
    }
    if run("agent_turn") || run("agent_session_50") {
        let (_ai, agent) = agent_assistant();
        if run("agent_turn") {
            count("agent_turn", || call_agent_turn(&agent)).await;
        }
        // Per session of AGENT_SESSION_TURNS turns (divide for a turn).
        if run("agent_session_50") {
            count("agent_session_50", || call_agent_session(&agent)).await;
        }
    }
}
