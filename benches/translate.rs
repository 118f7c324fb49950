//! Decode + translate + encode for each direction on a typical 300-byte message, in messages
//! per second on one core; the time to refuse each hostile YAML input; and, in the same run,
//! the same Wise Agents ↔ Civitas work in Python (PyYAML + json), for the ratio.
//!
//! `cargo bench --bench translate` (the Python figure needs `scripts/python-env.sh`).

use criterion::{Criterion, Throughput};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use stomp_agent_bridge::envelope::Direction;
use stomp_agent_bridge::envelope::SystemClock;
use stomp_agent_bridge::envelope::civitas::Encoding;
use stomp_agent_bridge::envelope::codecs::{Codecs, Encoded, Framework, Origin};
use stomp_agent_bridge::envelope::wiseagents::WiseMessage;

const TYPICAL: &str = "!wiseagents.WiseAgentMessage
_context_name: Weather
_message: 'What will the weather be like in San Francisco, CA tomorrow afternoon? Please give
  the temperature in celsius and the chance of rain.'
_message_type: QUERY
_route_response_to: User
_sender: Assistant
_tool_id: call_9f2c1b7e
";

fn origin(content_type: Option<&'static str>) -> Origin<'static> {
    Origin { direction: Direction::Request, recipient: "WeatherAgent", content_type }
}

/// The typical message as each framework writes it (a response, as replies come back).
fn bodies(codecs: &mut Codecs) -> Vec<(Framework, Option<Encoding>, Encoded)> {
    let mut env =
        codecs.decode(Framework::WiseAgents, TYPICAL.as_bytes(), origin(None), &mut SystemClock).unwrap();
    env.direction = Direction::Response;
    let mut out = Vec::new();
    for (fw, enc) in [
        (Framework::Civitas, Some(Encoding::Json)),
        (Framework::Civitas, Some(Encoding::Msgpack)),
        (Framework::Vox, None),
        (Framework::PenguiFlow, None),
    ] {
        out.push((fw, enc, codecs.encode(fw, &env, enc, &mut SystemClock).unwrap()));
    }
    out
}

fn label(fw: Framework, enc: Option<Encoding>) -> String {
    match enc {
        Some(Encoding::Msgpack) => format!("{fw}-msgpack"),
        _ => fw.to_string(),
    }
}

fn directions(c: &mut Criterion, codecs: &mut Codecs) {
    let mut group = c.benchmark_group("translate");
    group.throughput(Throughput::Elements(1));
    eprintln!("typical Wise Agents body: {} bytes", TYPICAL.len());
    for (fw, enc, Encoded { body, content_type }) in bodies(codecs) {
        let name = label(fw, enc);
        group.bench_function(format!("wiseagents->{name}"), |b| {
            b.iter(|| {
                let env = codecs
                    .decode(
                        Framework::WiseAgents,
                        black_box(TYPICAL.as_bytes()),
                        origin(None),
                        &mut SystemClock,
                    )
                    .unwrap();
                codecs.encode(fw, &env, enc, &mut SystemClock).unwrap()
            })
        });
        group.bench_function(format!("{name}->wiseagents"), |b| {
            b.iter(|| {
                codecs
                    .translate(
                        fw,
                        Framework::WiseAgents,
                        black_box(&body),
                        origin(content_type),
                        &mut SystemClock,
                    )
                    .unwrap()
            })
        });
    }
    group.finish();
}

fn hostile_inputs() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/vectors/wiseagents");
    let mut out = Vec::new();
    for name in
        ["24_python_exec", "25_billion_laughs", "26_deep_nesting", "27_not_utf8", "28_message_not_string"]
    {
        out.push((name.to_owned(), std::fs::read(dir.join(format!("{name}.yaml"))).unwrap()));
    }
    out.push(("800KB_of_brackets".to_owned(), "[".repeat(800_000).into_bytes()));
    let keys: String = (0..200_000).map(|i| format!("k{i}: v\n")).collect();
    out.push(("200k_keys".to_owned(), format!("!wiseagents.WiseAgentMessage\n{keys}").into_bytes()));
    out
}

fn hostile(c: &mut Criterion) {
    let mut group = c.benchmark_group("refuse");
    for (name, body) in hostile_inputs() {
        group.bench_function(&name, |b| b.iter(|| WiseMessage::parse(black_box(&body)).unwrap_err()));
    }
    group.finish();
}

/// Messages per second of Wise Agents → Civitas (JSON) over about two seconds.
fn rust_rate(codecs: &mut Codecs) -> f64 {
    let (mut n, start) = (0u64, Instant::now());
    while start.elapsed() < Duration::from_secs(2) {
        for _ in 0..1000 {
            let env = codecs
                .decode(Framework::WiseAgents, black_box(TYPICAL.as_bytes()), origin(None), &mut SystemClock)
                .unwrap();
            black_box(
                codecs.encode(Framework::Civitas, &env, Some(Encoding::Json), &mut SystemClock).unwrap(),
            );
        }
        n += 1000;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// The Python figures, or why there are none.
fn python_rates() -> Result<String, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("SAB_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join(".venv"))
        .join("bin/python");
    let body = std::env::temp_dir().join("sab-bench-typical.yaml");
    std::fs::write(&body, TYPICAL).map_err(|e| e.to_string())?;
    let out = std::process::Command::new(&python)
        .arg(root.join("tests/interop/bench_python.py"))
        .arg(&body)
        .output()
        .map_err(|e| format!("{}: {e} (run scripts/python-env.sh)", python.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn main() {
    let mut codecs = Codecs::default();
    let mut c = Criterion::default().configure_from_args();
    directions(&mut c, &mut codecs);
    hostile(&mut c);
    c.final_summary();
    // Only a real benchmark run measures (not `--list`, nor `cargo test --benches`).
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") || args.iter().any(|a| a == "--list") {
        return;
    }

    let rust = rust_rate(&mut codecs);
    println!("rust wiseagents->civitas: {rust:.0} msg/s on one core");
    match python_rates() {
        Ok(lines) => {
            print!("{lines}");
            let loader = lines
                .lines()
                .find(|l| l.contains("(yaml.Loader)"))
                .and_then(|l| l.split_whitespace().rev().nth(1));
            if let Some(py) = loader.and_then(|n| n.parse::<f64>().ok()) {
                println!("ratio rust / python (yaml.Loader): {:.0}x", rust / py);
            }
        }
        Err(why) => println!("no Python figure: {why}"),
    }
}
