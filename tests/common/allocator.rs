//! The allocator of the test binaries that run catalogs and campaigns in process: mimalloc,
//! as in the CLI (src/main.rs). Their many short-lived JSON values made the system
//! allocator a fifth of a catalog run's CPU (tests/faults.rs: 2.3 s of CPU a fault, 1.85 s
//! with mimalloc), and CI runs the catalog hundreds of times. Included with
//! `#[path = "common/allocator.rs"] mod allocator;`.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
