"""Writes each message of a JSON-lines file (the six fields) as PyYAML's yaml.dump of a
WiseAgentMessage writes it, one JSON string per line: real PyYAML bodies, folded at 80
columns, for tests/yaml_fast_path.rs."""

import json
import sys

import yaml


class WiseAgentMessage(yaml.YAMLObject):
    yaml_tag = "!wiseagents.WiseAgentMessage"


for line in open(sys.argv[1]):
    message = WiseAgentMessage()
    message.__dict__.update(json.loads(line))
    print(json.dumps(yaml.dump(message)))
