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
