"""wiseagents.yaml: the base class whose pickle (and YAML) state drops the leading underscore
of every attribute, and restores it on load (wiseagents_yaml_object.py 32-133). This is why
WiseAgentMetaData and WiseAgentTool pickle as {'description': ...}, not {'_description': ...}."""

import yaml


class WiseAgentsLoader(yaml.FullLoader):
    """Upstream's loader also imports the module of every tag it sees first; the model's
    classes are all imported already."""


class WiseAgentsYAMLObject(yaml.YAMLObject):
    yaml_loader = WiseAgentsLoader

    def __getstate__(self) -> dict:
        return {key[1:]: value for key, value in self.__dict__.items() if key.startswith("_")}

    def __setstate__(self, state: dict) -> None:
        for key, value in state.items():
            setattr(self, f"_{key}", value)


__all__ = ["WiseAgentsLoader", "WiseAgentsYAMLObject"]
