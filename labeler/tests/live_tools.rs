//! Running the live topology tools: real child processes (shell scripts that
//! stand where nvidia-smi would), for what only running can show: a tool
//! that is not installed, one that fails, one that hangs, and a failed run
//! between good ones.

use crate::common;

use common::{local_fixture, scratch_dir, topology_fixtures};
use gpu_topology_labeler::discover::{
    discover, PathSource, SourceOptions, ToolMemory, ToolSource, REPORT_REUSE_LIMIT,
};
use gpu_topology_labeler::model::ToolReport;
use gpu_topology_labeler::parse::{nvidia_smi, nvidia_smi_list};
use gpu_topology_labeler::reconcile::devices::MigStrategy;
use gpu_topology_labeler::reconcile::{reconcile, VendorChoice};
use gpu_topology_labeler::sources::command::{CommandOutput, Runner};
use rstest::rstest;
use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

const FIXTURE: &str = "h100-sxm-8gpu-2numa.txt";
const MIG_FIXTURE: &str = "mig/hgx-a100-mixed-nvidia-smi-L.txt";
const FABRIC_FIXTURE: &str = "fabric/gb200-completed-grep-c3.txt";

/// Every script, written before any test starts a process: a script still
/// open for writing while another thread forks cannot be executed
/// ("text file busy").
static SCRIPTS: LazyLock<PathBuf> = LazyLock::new(|| {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir("live-tools");
    let fixture = topology_fixtures().join(FIXTURE);
    let scripts = [
        ("good", format!("cat '{}'", fixture.display())),
        (
            "failing",
            "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\" >&2; exit 9"
                .to_owned(),
        ),
        ("hanging", "exec sleep 30".to_owned()),
        // Runs until the file `gate` appears next to it.
        (
            "lingering",
            format!(
                "while [ ! -e '{}' ]; do sleep 0.05; done",
                dir.join("gate").display()
            ),
        ),
        ("garbage", "echo 'no matrix here'".to_owned()),
        // Good until the file `lost` appears next to it (a GPU fell off the bus).
        (
            "failing-after-loss",
            format!(
                "if [ -e '{}' ]; then echo 'Unable to determine the device handle for GPU00000000:3A:00.0: GPU is lost' >&2; exit 15; fi; cat '{}'",
                dir.join("lost").display(),
                fixture.display()
            ),
        ),
        // Good until the file `broken` appears next to it.
        (
            "flaky",
            format!(
                "if [ -e '{}' ]; then exit 1; fi; cat '{}'",
                dir.join("broken").display(),
                fixture.display()
            ),
        ),
        // `nvidia-smi -L`, good until the file `mig-broken` appears next to it.
        (
            "mig-flaky",
            format!(
                "if [ -e '{}' ]; then exit 1; fi; cat '{}'",
                dir.join("mig-broken").display(),
                local_fixture(MIG_FIXTURE).display()
            ),
        ),
        // nvidia-smi answering `-q` with a GB200's fabric section and
        // `topo -m` with the topology.
        (
            "fabric",
            format!(
                "if [ \"$1\" = -q ]; then cat '{}'; else cat '{}'; fi",
                local_fixture(FABRIC_FIXTURE).display(),
                fixture.display()
            ),
        ),
    ];
    for (name, body) in scripts {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
});

fn script(name: &str) -> String {
    SCRIPTS.join(name).display().to_string()
}

/// Runs `program` until `done` accepts the outcome, for up to 10 s: a killed
/// process is reaped a moment after its kill, on a loaded machine later.
async fn run_until(
    runner: &mut Runner,
    program: &str,
    timeout: Duration,
    done: impl Fn(&Result<CommandOutput, String>) -> bool,
) -> Result<CommandOutput, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let outcome = runner
            .run(program, &["topo", "-m"], timeout)
            .await
            .map_err(|e| e.to_string());
        if done(&outcome) || Instant::now() > deadline {
            return outcome;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_tool_that_is_not_installed_is_no_error() {
    LazyLock::force(&SCRIPTS); // no fork while a script is being written
    let output = Runner::default()
        .run(
            "/nonexistent/nvidia-smi",
            &["topo", "-m"],
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(output, CommandOutput::NotInstalled);
}

#[tokio::test]
async fn a_good_run_gives_its_output() {
    let CommandOutput::Stdout(text) = Runner::default()
        .run(&script("good"), &["topo", "-m"], Duration::from_secs(10))
        .await
        .unwrap()
    else {
        panic!("no output");
    };
    assert_eq!(
        text,
        std::fs::read_to_string(topology_fixtures().join(FIXTURE)).unwrap()
    );
}

#[tokio::test]
async fn an_error_exit_names_the_status_and_quotes_stderr() {
    let error = Runner::default()
        .run(&script("failing"), &["topo", "-m"], Duration::from_secs(10))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("exit status: 9"), "{error}");
    assert!(
        error.contains("couldn't communicate with the NVIDIA driver"),
        "{error}"
    );
}

#[tokio::test]
async fn a_hanging_tool_is_killed_at_the_timeout() {
    let mut runner = Runner::default();
    let started = Instant::now();
    let error = runner
        .run(
            &script("hanging"),
            &["topo", "-m"],
            Duration::from_millis(300),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("no answer within 300ms"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // Once the killed run has exited, the same tool starts again (and is
    // killed at its timeout again), instead of being refused as lingering.
    let again = run_until(
        &mut runner,
        &script("hanging"),
        Duration::from_millis(300),
        |outcome| !matches!(outcome, Err(e) if e.contains("has not exited yet")),
    )
    .await
    .unwrap_err();
    assert!(again.contains("no answer within 300ms"), "{again}");
}

/// A run that is still alive after its kill (stuck in the kernel, as on a
/// wedged driver; here a live process stands for it) blocks new runs of the
/// same tool until it exits, and only of that tool.
#[tokio::test]
async fn no_tool_starts_while_an_earlier_run_of_it_lingers() {
    let mut runner = Runner::default();
    let program = script("good");
    let lingering = tokio::process::Command::new(script("lingering"))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    runner.linger(&program, lingering);
    let error = runner
        .run(&program, &["topo", "-m"], Duration::from_secs(10))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("has not exited yet"), "{error}");
    let other = runner
        .run(&script("failing"), &["topo", "-m"], Duration::from_secs(10))
        .await
        .unwrap_err()
        .to_string();
    assert!(other.contains("exit status: 9"), "{other}");
    // Once it has exited, the tool runs again.
    std::fs::write(SCRIPTS.join("gate"), "").unwrap();
    let output = run_until(&mut runner, &program, Duration::from_secs(10), |outcome| {
        outcome.is_ok()
    })
    .await;
    assert!(matches!(output, Ok(CommandOutput::Stdout(_))), "{output:?}");
}

fn live(program: &str) -> SourceOptions {
    SourceOptions {
        sysfs: PathSource::Disabled,
        nvidia_smi: ToolSource::Command(program.to_owned()),
        nvidia_smi_list: ToolSource::Disabled,
        nvidia_smi_query: ToolSource::Disabled,
        mig_strategy: Default::default(),
        devices: Default::default(),
        rocm_smi: ToolSource::Disabled,
        nvml: false,
        kubelet: PathSource::Disabled,
        kubelet_drop_ins: None,
        kubelet_version: None,
        vendor: VendorChoice::Auto,
        command_timeout: Duration::from_secs(10),
    }
}

/// A failed run between good ones reuses the last good report (with a
/// warning), so link labels do not vanish for a round.
#[tokio::test]
async fn a_failed_run_reuses_the_last_good_report() {
    let flaky = script("flaky");
    let broken = SCRIPTS.join("broken");
    let _ = std::fs::remove_file(&broken);
    let mut memory = ToolMemory::default();
    let good = discover(&live(&flaky), &mut memory).await.unwrap();
    assert_eq!(good.inputs.tools.len(), 1);
    assert!(good.warnings.is_empty(), "{:?}", good.warnings);

    std::fs::write(&broken, "").unwrap();
    let failed = discover(&live(&flaky), &mut memory).await.unwrap();
    // Without a good report to fall back on, its labels are left out.
    let unremembered = discover(&live(&flaky), &mut ToolMemory::default())
        .await
        .unwrap();
    std::fs::remove_file(&broken).unwrap();
    // The same report, marked as an earlier run's.
    let earlier: Vec<ToolReport> = good
        .inputs
        .tools
        .iter()
        .map(|report| ToolReport {
            from_earlier_run: true,
            ..report.clone()
        })
        .collect();
    assert_eq!(failed.inputs.tools, earlier);
    assert!(good
        .inputs
        .tools
        .iter()
        .all(|report| !report.from_earlier_run));
    assert!(
        failed
            .warnings
            .iter()
            .any(|w| w.contains("exit status: 1") && w.contains("using its last good report")),
        "{:?}",
        failed.warnings
    );
    assert!(unremembered.inputs.tools.is_empty());
    assert!(
        unremembered
            .warnings
            .iter()
            .any(|w| w.contains("its labels are left out")),
        "{:?}",
        unremembered.warnings
    );
}

/// `nvidia-smi -L` as run for the MIG devices.
fn live_mig_listing(program: &str) -> SourceOptions {
    SourceOptions {
        nvidia_smi: ToolSource::Disabled,
        nvidia_smi_list: ToolSource::Command(program.to_owned()),
        mig_strategy: MigStrategy::Mixed,
        ..live(program)
    }
}

/// The MIG listing is run like the topology tools, but a failed run never
/// reuses an earlier listing (MIG devices are re-cut while a node runs): it
/// costs the MIG labels, with a warning naming the run; output that does not
/// parse likewise.
#[tokio::test]
async fn a_failed_mig_listing_leaves_the_mig_labels_out() {
    let program = script("mig-flaky");
    let broken = SCRIPTS.join("mig-broken");
    let _ = std::fs::remove_file(&broken);
    let mut memory = ToolMemory::default();
    let good = discover(&live_mig_listing(&program), &mut memory)
        .await
        .unwrap();
    let text = std::fs::read_to_string(local_fixture(MIG_FIXTURE)).unwrap();
    assert_eq!(
        good.inputs.mig.listed,
        Some(nvidia_smi_list::parse(&text).unwrap())
    );
    assert!(good.warnings.is_empty(), "{:?}", good.warnings);

    std::fs::write(&broken, "").unwrap();
    let failed = discover(&live_mig_listing(&program), &mut memory)
        .await
        .unwrap();
    std::fs::remove_file(&broken).unwrap();
    assert_eq!(failed.inputs.mig.listed, None);
    assert!(
        failed
            .warnings
            .iter()
            .any(|w| w.starts_with(&format!("{program} -L failed"))
                && w.contains("exit status: 1")
                && w.ends_with("the MIG labels are left out")),
        "{:?}",
        failed.warnings
    );

    let garbage = discover(&live_mig_listing(&script("garbage")), &mut memory)
        .await
        .unwrap();
    assert_eq!(garbage.inputs.mig.listed, None);
    assert!(
        garbage.warnings.iter().any(|w| w.contains("-L output not used")
            && w.ends_with("the MIG labels are left out")),
        "{:?}",
        garbage.warnings
    );
}

/// Output that does not parse is never papered over with an old report.
#[tokio::test]
async fn unparsable_output_is_not_replaced_by_the_last_report() {
    let mut memory = ToolMemory::default();
    discover(&live(&script("good")), &mut memory).await.unwrap();
    let garbage = script("garbage");
    let report = memory
        .recall(&script("good"), Instant::now())
        .unwrap()
        .0
        .clone();
    memory.remember(&garbage, &report, Instant::now());
    let discovery = discover(&live(&garbage), &mut memory).await.unwrap();
    assert!(discovery.inputs.tools.is_empty());
    assert!(
        discovery
            .warnings
            .iter()
            .any(|w| w.contains("output not used")),
        "{:?}",
        discovery.warnings
    );
}

#[rstest]
#[case::just_now(Duration::ZERO, true)]
#[case::at_the_limit(REPORT_REUSE_LIMIT, true)]
#[case::past_the_limit(REPORT_REUSE_LIMIT + Duration::from_secs(1), false)]
fn a_report_stands_in_for_ten_minutes(#[case] age: Duration, #[case] recalled: bool) {
    let text = std::fs::read_to_string(topology_fixtures().join(FIXTURE)).unwrap();
    let report = nvidia_smi::parse(&text).unwrap().into_report(true);
    let mut memory = ToolMemory::default();
    let at = Instant::now();
    memory.remember("nvidia-smi", &report, at);
    assert_eq!(memory.recall("nvidia-smi", at + age).is_some(), recalled);
    assert!(memory.recall("rocm-smi", at).is_none());
}

/// A GPU lost between two rounds: nvidia-smi now fails, and its last good
/// report (8 GPUs) predates the loss. Standing in, it must not veto what sysfs
/// shows (7 GPUs), which would drop every GPU label; it is stale, not used.
#[tokio::test]
async fn a_stand_in_report_from_before_a_lost_gpu_is_not_used() {
    let tree = common::scratch_copy("sysfs/two-socket-8gpu", "live-tools-lost-gpu");
    let program = script("failing-after-loss");
    let lost = SCRIPTS.join("lost");
    let _ = std::fs::remove_file(&lost);
    let options = SourceOptions {
        sysfs: PathSource::Explicit(tree.clone()),
        ..live(&program)
    };
    let mut memory = ToolMemory::default();
    let before = reconcile(&discover(&options, &mut memory).await.unwrap().inputs);
    assert_eq!(before.topology.gpus, Some(8));
    assert_eq!(before.topology.nvlink_group_max, Some(8));

    std::fs::remove_dir_all(tree.join("bus/pci/devices/0000:3a:00.0")).unwrap();
    std::fs::write(&lost, "").unwrap();
    let discovery = discover(&options, &mut memory).await.unwrap();
    std::fs::remove_file(&lost).unwrap();
    assert!(discovery.inputs.tools.iter().all(|t| t.from_earlier_run));
    let after = reconcile(&discovery.inputs);
    assert_eq!(after.topology.gpus, Some(7));
    assert_eq!(after.topology.numa_gpus, Some(vec![3, 4]));
    // No link source covers the 7 GPUs now: the link labels are left out.
    assert_eq!(after.topology.nvlink_group_max, None);
    assert!(
        after
            .warnings
            .iter()
            .any(|w| w.contains("last good report lists 8 GPUs but sysfs now shows 7")),
        "{:?}",
        after.warnings
    );
}

/// nvidia-smi is run once more, as `nvidia-smi -q`, for the fabric
/// sections: its output reaches the inputs, besides `topo -m`'s report.
#[tokio::test]
async fn nvidia_smi_is_asked_for_the_fabric_with_q() {
    let program = script("fabric");
    let options = SourceOptions {
        nvidia_smi_query: ToolSource::Command(program.clone()),
        ..live(&program)
    };
    let discovery = discover(&options, &mut ToolMemory::default())
        .await
        .unwrap();
    assert!(discovery.warnings.is_empty(), "{:?}", discovery.warnings);
    assert_eq!(discovery.inputs.tools.len(), 1);
    let text = std::fs::read_to_string(local_fixture(FABRIC_FIXTURE)).unwrap();
    assert_eq!(
        discovery.inputs.fabric,
        Some(gpu_topology_labeler::parse::nvidia_smi_query::parse(&text).unwrap())
    );
}
