"""Every adapter test that takes ``broker`` runs on ActiveMQ Classic, RabbitMQ and ActiveMQ
Artemis (all as scripts/brokers.sh starts them)."""

import pytest

from sab_testing import Broker

BROKERS = {"activemq": Broker, "rabbitmq": Broker.rabbitmq, "artemis": Broker.artemis}


@pytest.fixture(params=list(BROKERS))
def broker(request):
    return BROKERS[request.param]()
