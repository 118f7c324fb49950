//! Civitas: the `Message.to_dict()` shape, as JSON or msgpack, and its mapping onto the
//! canonical envelope.
