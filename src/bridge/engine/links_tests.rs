use super::{Link, Links};

#[test]
fn the_links_are_up_only_once_every_connection_lost_is_back() {
    let one_down = Links::Up.lost(Link::Publishing);
    assert!(one_down.is_down(Link::Publishing) && !one_down.is_down(Link::Consuming));
    assert_eq!(one_down.lost(Link::Publishing), one_down, "lost twice is lost");
    let both = one_down.lost(Link::Consuming);
    assert_eq!(both, Links::BothDown);
    let consuming_back = both.back(Link::Consuming);
    assert!(consuming_back.is_down(Link::Publishing) && !consuming_back.is_down(Link::Consuming));
    assert_eq!(consuming_back.back(Link::Consuming), consuming_back, "the other is still down");
    assert_eq!(consuming_back.back(Link::Publishing), Links::Up);
}
