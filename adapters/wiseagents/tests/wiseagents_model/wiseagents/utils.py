"""utils.py: the abstract-class guard (upstream 1-20). log_messages_exchanged, which writes
SEQUENTIAL_MEMORY conversations to ./log/messages, is not modelled: it touches no wire."""


class AbstractClassError(Exception):
    pass


def enforce_no_abstract_class_instances(cls: type, check: type) -> None:
    if cls is check:
        raise AbstractClassError(f"Class {cls.__name__} is an abstract class and cannot be instantiated.")
