"""Every adapter test that takes ``broker`` runs on ActiveMQ Classic and on RabbitMQ (both as
scripts/brokers.sh starts them)."""

import pytest
from sab_stomp.testing import Broker


@pytest.fixture(params=["activemq", "rabbitmq"])
def broker(request):
    return Broker() if request.param == "activemq" else Broker.rabbitmq()
