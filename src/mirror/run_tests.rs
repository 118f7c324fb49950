use super::*;
use crate::envelope::Direction;

fn tapped() -> Original {
    Original { queue: "/queue/request/A".into(), direction: Direction::Request, agent: "A".into() }
}

#[test]
fn a_full_buffer_drops_and_counts_without_waiting() {
    let metrics = MirrorMetrics::default();
    let (tx, mut rx) = mpsc::channel(1);
    assert!(offer(&tx, tapped(), Bytes::from_static(b"first"), &metrics));
    assert!(offer(&tx, tapped(), Bytes::from_static(b"second"), &metrics), "full: dropped, not waited for");
    assert_eq!(metrics.dropped(), 1);
    assert_eq!(rx.try_recv().map(|(_, body)| body).ok(), Some(Bytes::from_static(b"first")));
    drop(rx);
    assert!(!offer(&tx, tapped(), Bytes::new(), &metrics), "the publisher is gone");
}
