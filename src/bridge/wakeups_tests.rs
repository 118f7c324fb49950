use super::*;

const WINDOW: Duration = Duration::from_micros(500);

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// A thread woken every `gap` with `frames` frames each time, `wakes` times from `t`: what it
/// lingered the last time, and when that was.
fn run(
    c: &mut Coalescing,
    t: Instant,
    read: &mut u64,
    wakes: usize,
    gap: u64,
    frames: u64,
) -> (Duration, Instant) {
    let mut at = t;
    let mut linger = Duration::ZERO;
    for _ in 0..wakes {
        c.woke(at + linger + us(gap));
        *read += frames;
        at = at + linger + us(gap + 20);
        linger = c.before_sleep(at, *read);
    }
    (linger, at)
}

/// A thread woken every 200 µs (150 µs after it went to sleep) `wakes` times, with the frames
/// of `pattern` in turn: whether it lingered after each wake-up.
fn lingered(pattern: &[u64], wakes: usize) -> Vec<bool> {
    let t0 = Instant::now();
    let mut c = Coalescing::new(WINDOW);
    let mut read = 0;
    c.before_sleep(t0, read);
    (0..wakes)
        .map(|i| {
            let frames = pattern[i % pattern.len()];
            run(&mut c, t0 + us(200 * i as u64), &mut read, 1, 150, frames).0 > Duration::ZERO
        })
        .collect()
}

#[test]
fn an_idle_thread_sleeps_at_once() {
    let t0 = Instant::now();
    let mut c = Coalescing::new(WINDOW);
    assert_eq!(c.before_sleep(t0, 0), Duration::ZERO, "nothing seen yet: not busy");
    let (linger, _) = run(&mut c, t0, &mut 0, 20, 5_000, 4);
    assert_eq!(linger, Duration::ZERO, "woken every 5 ms: each message handled at once");
}

#[test]
fn frames_that_come_often_and_together_make_it_linger_until_they_stop() {
    let t0 = Instant::now();
    let mut c = Coalescing::new(WINDOW);
    let mut read = 0;
    c.before_sleep(t0, read);
    let (linger, at) = run(&mut c, t0, &mut read, 20, 80, 3);
    assert_eq!(linger, WINDOW, "woken every 80 µs, three frames each time: busy");
    // A wait of longer than the window after the linger: idle again, at once.
    c.woke(at + WINDOW + us(2_000));
    read += 3;
    assert_eq!(c.before_sleep(at + WINDOW + us(2_050), read), Duration::ZERO);
}

#[test]
fn one_frame_per_wake_up_is_a_chain_of_steps_and_is_never_delayed() {
    // A lone A2A client: woken every 150 µs, each time by the one frame its last step caused
    // (or by its HTTP request: none).
    let lingered = lingered(&[1, 0, 1], 50);
    assert_eq!(lingered.iter().position(|l| *l), None, "a wake-up lingered");
}

#[test]
fn the_window_is_measured_from_the_end_of_the_linger() {
    let t0 = Instant::now();
    let mut c = Coalescing::new(WINDOW);
    let mut read = 0;
    c.before_sleep(t0, read);
    let (linger, at) = run(&mut c, t0, &mut read, 20, 50, 4);
    assert_eq!(linger, WINDOW);
    // Woken 400 µs after the linger ended (900 µs after the thread had nothing to do).
    c.woke(at + WINDOW + us(400));
    read += 4;
    assert_eq!(c.before_sleep(at + WINDOW + us(410), read), WINDOW, "its wait was shorter than the window");
}

#[test]
fn a_chain_of_one_frame_wake_ups_with_a_pair_now_and_then_never_lingers() {
    // A STOMP request and reply at a time: one frame per wake-up, two every tenth (a RECEIPT
    // and the answer read together). Rounding the average down must not carry it upwards.
    let lingered = lingered(&[1, 1, 1, 1, 1, 1, 1, 1, 1, 2], 1_000);
    assert_eq!(lingered.iter().position(|l| *l), None, "a wake-up lingered");
}

#[test]
fn it_lingers_above_one_and_a_half_frames_per_wake_up_and_not_below() {
    // 1.33, 2 and 1.67 frames per wake-up; the average is recent, so below 1.5 it never lingers
    // and above it always does.
    for (pattern, lingers) in [(&[1u64, 1, 2][..], false), (&[2, 2][..], true), (&[1, 2, 2][..], true)] {
        let lingered = lingered(pattern, 300);
        let wrong = lingered.iter().skip(100).position(|l| *l != lingers).map(|i| i + 100);
        assert_eq!(wrong, None, "frames per wake-up {pattern:?}");
    }
}
