use super::*;

async fn read(bytes: &[u8]) -> Result<Reply, RedisError> {
    let mut input = bytes;
    read_reply(&mut input, 0).await
}

#[test]
fn a_command_is_an_array_of_bulk_strings() {
    assert_eq!(encode(&[b"HGET", b"agents", b"Civ"]), b"*3\r\n$4\r\nHGET\r\n$6\r\nagents\r\n$3\r\nCiv\r\n");
}

#[tokio::test]
async fn each_reply_type_reads_as_redis_writes_it() {
    assert_eq!(read(b"+OK\r\n").await.unwrap(), Reply::Simple("OK".into()));
    assert_eq!(read(b"-ERR no\r\n").await.unwrap(), Reply::Error("ERR no".into()));
    assert_eq!(read(b":12\r\n").await.unwrap(), Reply::Int(12));
    assert_eq!(read(b"$-1\r\n").await.unwrap(), Reply::Bulk(None));
    assert_eq!(read(b"$3\r\na\r\n\r\n").await.unwrap(), Reply::Bulk(Some(b"a\r\n".to_vec())));
    assert_eq!(read(b"*-1\r\n").await.unwrap(), Reply::Array(None), "EXEC after a WATCH failed");
    assert_eq!(
        read(b"*2\r\n:1\r\n$1\r\nx\r\n").await.unwrap(),
        Reply::Array(Some(vec![Reply::Int(1), Reply::Bulk(Some(b"x".to_vec()))]))
    );
}

#[tokio::test]
async fn oversized_truncated_and_strange_replies_are_errors() {
    assert!(matches!(read(b"$999999999999\r\n").await, Err(RedisError::Protocol(_))));
    assert!(matches!(read(b"*999999999\r\n").await, Err(RedisError::Protocol(_))));
    assert!(matches!(read(b"$5\r\nab").await, Err(RedisError::Io(_))));
    assert!(matches!(read(b"?x\r\n").await, Err(RedisError::Protocol(_))));
    assert!(matches!(read(b":x\r\n").await, Err(RedisError::Protocol(_))));
    assert!(matches!(read(b"+OK\n").await, Err(RedisError::Protocol(_))));
    assert!(matches!(read(&b"*1\r\n".repeat(20)).await, Err(RedisError::Protocol(_))));
}

/// A server that answers the PING of `open` at once and every later command only when the
/// test says, with `:<n>` for the n-th one: a reply read for the wrong call shows.
async fn slow_server() -> (u16, tokio::sync::mpsc::UnboundedSender<()>) {
    use tokio::io::AsyncWriteExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (release, mut released) = tokio::sync::mpsc::unbounded_channel::<()>();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut tcp = BufReader::new(tcp);
        for n in 0.. {
            let Ok(Reply::Array(_)) = read_reply(&mut tcp, 0).await else { return };
            if n > 0 && released.recv().await.is_none() {
                return;
            }
            let reply = if n == 0 { "+PONG\r\n".to_owned() } else { format!(":{n}\r\n") };
            let _ = tcp.get_mut().write_all(reply.as_bytes()).await;
        }
    });
    (port, release)
}

#[tokio::test]
async fn a_call_given_up_half_way_leaves_its_connection_unusable_rather_than_out_of_step() {
    let (port, release) = slow_server().await;
    let mut conn = Connection::open("127.0.0.1", port, None, 0).await.unwrap();
    assert!(conn.is_usable());
    // The caller's own timeout drops the call after its command went out.
    let given_up = tokio::time::timeout(Duration::from_millis(50), conn.call(&[b"HGET", b"k", b"f"])).await;
    assert!(given_up.is_err());
    release.send(()).unwrap();
    assert!(!conn.is_usable(), "its reply is still to come");
    let next = conn.call(&[b"HGET", b"k", b"g"]).await;
    assert!(matches!(next, Err(RedisError::Protocol(_))), "not the first call's reply: {next:?}");
}
