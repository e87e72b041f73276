//! Where a helper thread starts: on a core other than its spawner's.
//!
//! Linux queues a new thread on its parent's core. There it waits until the parent blocks, or
//! until the idle core pulls it at a scheduler tick (up to 4 ms at 250 Hz); a parent that goes
//! straight to work leaves it waiting, a third of a fast histogram's run. Worse, the new thread
//! may preempt its parent, and the two then share one core while the other idles. A helper is
//! therefore queued on a core of its own, and once it runs it may again run on any core of the
//! process's (the scheduler places it as any other thread from then on).

/// The cores helpers start on: those the calling thread may run on, but the one it runs on.
pub struct Cores {
    #[cfg(target_os = "linux")]
    others: Vec<usize>,
    /// The process's cores, which a started helper takes back.
    #[cfg(target_os = "linux")]
    all: libc::cpu_set_t,
}

impl Cores {
    /// The calling thread's cores, and the one it runs on.
    pub fn here() -> Cores {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: `cpu_set_t` is a plain bit set (all zeros is empty), written by a call
            // given its size; `sched_getcpu` takes nothing.
            let (all, read, current) = unsafe {
                let mut all: libc::cpu_set_t = std::mem::zeroed();
                let read = libc::sched_getaffinity(0, std::mem::size_of_val(&all), &mut all) == 0;
                (all, read, libc::sched_getcpu())
            };
            let others = (0..libc::CPU_SETSIZE as usize)
                // SAFETY: `cpu` is below the set's size.
                .filter(|&cpu| read && unsafe { libc::CPU_ISSET(cpu, &all) })
                .filter(|&cpu| usize::try_from(current).ok() != Some(cpu))
                .collect();
            Cores { others, all }
        }
        #[cfg(not(target_os = "linux"))]
        Cores {}
    }

    /// Queue the `k`-th helper (from 0) on a core of its own (none when the calling thread has
    /// only its own). The helper must not have ended: the handle of an ended thread names no
    /// thread, and glibc would then place the calling thread.
    pub fn place<T>(&self, k: usize, helper: &std::thread::JoinHandle<T>) {
        #[cfg(target_os = "linux")]
        if let Some(&cpu) = self.others.get(k % self.others.len().max(1)) {
            use std::os::unix::thread::JoinHandleExt;
            // SAFETY: a bit set naming one core below its size, for a thread not yet joined
            // (its handle is borrowed). A failure leaves the thread where it was.
            unsafe {
                let mut one: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut one);
                libc::pthread_setaffinity_np(helper.as_pthread_t(), std::mem::size_of_val(&one), &one);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (k, helper);
    }

    /// Called by a helper once it runs: free to run on any of the process's cores again.
    pub fn release(&self) {
        #[cfg(target_os = "linux")]
        if !self.others.is_empty() {
            // SAFETY: the set read by `here`, of its own size, for the calling thread.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&self.all), &self.all) };
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
pub(super) mod tests {
    use super::*;

    /// The cores the calling thread may run on.
    pub(in crate::cli) fn own_cores() -> Vec<usize> {
        // SAFETY: as in `Cores::here`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set), 0);
            (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
        }
    }

    #[test]
    fn a_helper_starts_on_another_core_then_may_run_on_any() {
        let cores = std::sync::Arc::new(Cores::here());
        let all = own_cores();
        // Every core of the thread's but the one it ran on.
        assert!(cores.others.iter().all(|c| all.contains(c)));
        assert_eq!(cores.others.len() + 1, all.len(), "{:?} of {all:?}", cores.others);
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let held = cores.clone();
        let helper = std::thread::spawn(move || {
            wait.recv().unwrap();
            let placed = own_cores();
            held.release();
            (placed, own_cores())
        });
        cores.place(0, &helper);
        go.send(()).unwrap();
        let (placed, released) = helper.join().unwrap();
        match cores.others.first() {
            Some(&other) => assert_eq!(placed, vec![other], "queued on a core of its own"),
            None => assert_eq!(placed, all, "one core: left where it was"),
        }
        assert_eq!(released, all);
    }

    #[test]
    fn helpers_take_the_other_cores_in_turn() {
        let cores = Cores::here();
        let placed: Vec<Vec<usize>> = (0..3)
            .map(|k| {
                let (go, wait) = std::sync::mpsc::channel::<()>();
                let helper = std::thread::spawn(move || {
                    wait.recv().unwrap();
                    own_cores()
                });
                cores.place(k, &helper);
                go.send(()).unwrap();
                helper.join().unwrap()
            })
            .collect();
        for (k, cpus) in placed.iter().enumerate() {
            if !cores.others.is_empty() {
                assert_eq!(cpus, &vec![cores.others[k % cores.others.len()]]);
            }
        }
    }
}
