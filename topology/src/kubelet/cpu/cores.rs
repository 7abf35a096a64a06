//! The CPUs of one NUMA node, as counts of cores of each kind (how many of
//! a core's threads are free, reusable from an init container, reserved or
//! taken), and the takes of `pkg/kubelet/cm/cpumanager/cpu_assignment.go`
//! confined to one node: `takeFullCores`, `takeRemainingCPUs` (cores with
//! the fewest available threads first) and `takeByTopologyNUMAPacked` on a
//! single node; the reserved CPUs laid out as the kubelet's `takeByTopology`
//! reserves them (`policy_static.go` `NewStaticPolicy`), and
//! `GetAvailablePhysicalCPUs`.

use super::super::facts::Fact;
use super::super::outcome::{Unknown, Unsupported};

/// One physical core: counts of its threads by state. Threads not counted
/// are assigned to earlier containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Core {
    free: u32,
    reusable: u32,
    pub(super) reserved: u32,
    /// Taken by the allocation in progress (from `free` / `reusable`).
    taken_free: u32,
    taken_reusable: u32,
}

impl Core {
    const fn available(self) -> u32 {
        self.free + self.reusable
    }

    /// What tells two cores apart for the rest of the admission: for an init
    /// container its taken threads become reusable, for others they are gone.
    const fn key(self, init: bool) -> (u32, u32, u32, u32) {
        let taken = if init {
            self.taken_free + self.taken_reusable
        } else {
            0
        };
        (self.free, self.reusable, self.reserved, taken)
    }

    /// The core with `count` more of its available threads taken, free ones
    /// first (the caller flags the choice when it is the CPU ids').
    fn take(self, count: u32) -> Core {
        let from_free = count.min(self.free);
        let from_reusable = (count - from_free).min(self.reusable);
        Core {
            free: self.free - from_free,
            reusable: self.reusable - from_reusable,
            taken_free: self.taken_free + from_free,
            taken_reusable: self.taken_reusable + from_reusable,
            ..self
        }
    }
}

/// The CPUs of one NUMA node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NumaCpus {
    /// CPUs of the node, reserved ones included.
    pub(super) cpus: u32,
    /// Cores by kind, or why their kinds are unknown.
    pub(super) cores: Result<Vec<(Core, u32)>, Unknown>,
    pub(super) free: u32,
    pub(super) reusable: u32,
    /// Taken by the allocation in progress.
    pub(super) taken: u32,
    /// `free` and `reusable` are right (their sum always is).
    pub(super) reusable_known: bool,
    /// Which free threads share a core with reserved ones is known.
    pub(super) physical_known: bool,
}

impl NumaCpus {
    pub(super) fn new(
        numa: usize,
        cpus: u32,
        reserved: u32,
        reserved_cores: Option<u32>,
        threads: u32,
    ) -> Self {
        let cores = Self::initial_cores(numa, cpus, reserved, reserved_cores, threads);
        NumaCpus {
            cpus,
            cores,
            free: cpus - reserved,
            reusable: 0,
            taken: 0,
            reusable_known: true,
            physical_known: true,
        }
    }

    /// The kubelet reserves CPUs core by core (`takeByTopology` from the
    /// lowest cores); with 2 threads per core, `reserved` CPUs on
    /// `reserved_cores` cores fill `reserved - cores` cores and half-fill the rest.
    fn initial_cores(
        numa: usize,
        cpus: u32,
        reserved: u32,
        reserved_cores: Option<u32>,
        t: u32,
    ) -> Result<Vec<(Core, u32)>, Unknown> {
        let core = |free, reserved| Core {
            free,
            reusable: 0,
            reserved,
            taken_free: 0,
            taken_reusable: 0,
        };
        let all = cpus / t;
        if reserved == 0 {
            return Ok(vec![(core(t, 0), all)]);
        }
        if t == 1 {
            return Ok(vec![(core(1, 0), cpus - reserved), (core(0, 1), reserved)]);
        }
        let k = reserved_cores.ok_or(Unknown::Missing(Fact::ReservedCores { numa }))?;
        let kinds = if reserved == k * t {
            vec![(core(t, 0), all - k), (core(0, t), k)]
        } else if t == 2 {
            vec![
                (core(2, 0), all - k),
                (core(0, 2), reserved - k),
                (core(1, 1), 2 * k - reserved),
            ]
        } else if k == 1 {
            vec![(core(t, 0), all - 1), (core(t - reserved, reserved), 1)]
        } else {
            return Err(Unknown::Unsupported(Unsupported::PartialReservedCores {
                numa,
            }));
        };
        Ok(kinds.into_iter().filter(|&(_, n)| n > 0).collect())
    }

    pub(super) fn available(&self) -> u32 {
        self.free + self.reusable
    }

    /// Free threads on cores without reserved ones (`GetAvailablePhysicalCPUs`).
    pub(super) fn free_physical(&self) -> Result<u32, Unknown> {
        let cores = self.cores.as_ref().map_err(|e| *e)?;
        Ok(cores
            .iter()
            .filter(|(c, _)| c.reserved == 0)
            .map(|(c, n)| c.free * n)
            .sum())
    }

    pub(super) fn whole_cores(&self, t: u32) -> Result<u32, Unknown> {
        let cores = self.cores.as_ref().map_err(|e| *e)?;
        Ok(cores
            .iter()
            .filter(|(c, _)| c.available() == t)
            .map(|(_, n)| n)
            .sum())
    }

    fn normalize(cores: &mut Vec<(Core, u32)>) {
        crate::sort::sort(cores);
        let mut merged: Vec<(Core, u32)> = Vec::with_capacity(cores.len());
        for &(core, n) in cores.iter().filter(|(_, n)| *n > 0) {
            match merged.last_mut() {
                Some((last, count)) if *last == core => *count += n,
                _ => merged.push((core, n)),
            }
        }
        *cores = merged;
    }

    /// Records a choice among `kinds` that CPU ids decide.
    fn flag_choice(&mut self, kinds: &[Core], init: bool) {
        let Some(first) = kinds.first() else { return };
        for other in &kinds[1..] {
            if other.reserved != first.reserved {
                self.physical_known = false;
            }
            let (a, b) = (first.key(init), other.key(init));
            if (a.0, a.1, a.3) != (b.0, b.1, b.3) {
                self.reusable_known = false;
            }
        }
    }

    /// Counts of a take the caller cannot place on cores.
    pub(super) fn take_counts(&mut self, count: u32) {
        let from_free = count.min(self.free);
        // Free or reusable threads first is the CPU ids' choice.
        if count > 0 && self.free > 0 && self.reusable > 0 {
            self.reusable_known = false;
        }
        self.free -= from_free;
        self.reusable -= count - from_free;
        self.taken += count;
    }

    /// Takes every available thread.
    pub(super) fn take_all(&mut self) {
        if let Ok(cores) = &mut self.cores {
            for (core, _) in cores.iter_mut() {
                *core = core.take(core.available());
            }
            Self::normalize(cores);
        }
        self.taken += self.available();
        self.free = 0;
        self.reusable = 0;
    }

    /// Takes `count` cores among those with `per_core` available threads,
    /// `per_core` threads each (or `partial` threads of one more core),
    /// in core-id order: which kinds go is the ids' choice when they differ.
    fn take_in_class(&mut self, per_core: u32, count: u32, partial: u32, init: bool) {
        let Ok(cores) = &self.cores else { return };
        let class: Vec<(Core, u32)> = cores
            .iter()
            .filter(|(c, _)| c.available() == per_core)
            .copied()
            .collect();
        let in_class: u32 = class.iter().map(|(_, n)| n).sum();
        let touched = count + u32::from(partial > 0);
        let mut distinct: Vec<Core> = Vec::new();
        for (core, _) in &class {
            if !distinct.iter().any(|d| d.key(init) == core.key(init)) {
                distinct.push(*core);
            }
        }
        if touched > 0 && touched < in_class {
            self.flag_choice(&distinct, init);
        }
        let mut left = count;
        let mut partial_left = partial;
        let mut next: Vec<(Core, u32)> = Vec::new();
        let mut taken_free = 0;
        let mut taken_reusable = 0;
        for (core, n) in class {
            let whole = left.min(n);
            left -= whole;
            let mut rest = n - whole;
            if whole > 0 {
                let done = core.take(per_core);
                taken_free += (done.taken_free - core.taken_free) * whole;
                taken_reusable += (done.taken_reusable - core.taken_reusable) * whole;
                next.push((done, whole));
            }
            if partial_left > 0 && rest > 0 && left == 0 {
                if core.free > 0 && core.reusable > 0 {
                    self.reusable_known = false;
                }
                let done = core.take(partial_left);
                taken_free += done.taken_free - core.taken_free;
                taken_reusable += done.taken_reusable - core.taken_reusable;
                next.push((done, 1));
                rest -= 1;
                partial_left = 0;
            }
            next.push((core, rest));
        }
        if let Ok(cores) = &mut self.cores {
            cores.retain(|(c, _)| c.available() != per_core);
            cores.extend(next);
            Self::normalize(cores);
        }
        self.free -= taken_free;
        self.reusable -= taken_reusable;
        self.taken += taken_free + taken_reusable;
    }

    /// `takeFullCores` on this node: `count` whole cores.
    pub(super) fn take_whole_cores(&mut self, count: u32, t: u32, init: bool) {
        self.take_in_class(t, count, 0, init);
    }

    /// `takeRemainingCPUs` on this node: `count` threads, cores with the
    /// fewest available threads first, each core's threads together.
    pub(super) fn take_threads(&mut self, count: u32, t: u32, init: bool) {
        if self.cores.is_err() {
            self.take_counts(count);
            return;
        }
        let mut left = count;
        for per_core in 1..=t {
            if left == 0 {
                break;
            }
            let in_class: u32 = match &self.cores {
                Ok(cores) => cores
                    .iter()
                    .filter(|(c, _)| c.available() == per_core)
                    .map(|(_, n)| n)
                    .sum(),
                Err(_) => 0,
            };
            let threads = in_class * per_core;
            if left >= threads {
                self.take_in_class(per_core, in_class, 0, init);
                left -= threads;
            } else {
                self.take_in_class(per_core, left / per_core, left % per_core, init);
                left = 0;
            }
        }
    }

    /// `takeByTopologyNUMAPacked` confined to this node: whole cores, then
    /// threads (a whole node is only taken when all of it is asked for).
    pub(super) fn take_packed(&mut self, count: u32, t: u32, init: bool) {
        if count == 0 {
            return;
        }
        if count == self.available() {
            self.take_all();
            return;
        }
        match self.whole_cores(t) {
            Ok(whole) => {
                let cores = whole.min(count / t);
                self.take_whole_cores(cores, t, init);
                self.take_threads(count - cores * t, t, init);
            }
            Err(_) => self.take_counts(count),
        }
    }

    /// Ends the allocation: an init container's threads become reusable.
    pub(super) fn finish(&mut self, init: bool) {
        if init {
            self.reusable += self.taken;
        }
        self.taken = 0;
        if let Ok(cores) = &mut self.cores {
            for (core, _) in cores.iter_mut() {
                if init {
                    core.reusable += core.taken_free + core.taken_reusable;
                }
                core.taken_free = 0;
                core.taken_reusable = 0;
            }
            Self::normalize(cores);
        }
    }
}
