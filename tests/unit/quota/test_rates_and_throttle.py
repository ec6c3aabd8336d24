"""The quota arithmetic: rates over sampled windows (QUOTA-5), throttle times (QUOTA-6),
with times given in milliseconds, as Kafka's metrics take them."""

from __future__ import annotations

import pytest

from kafka_ref.quota.entity import QuotaEntity
from kafka_ref.quota.manager import ClientQuotaManager, QuotaManagers
from kafka_ref.quota.rate import Avg, Rate

MIB = 1 << 20


@pytest.mark.spec("QUOTA-5")
def test_a_new_rate_divides_by_at_least_samples_minus_one_windows():
    rate = Rate(11, 1000)
    rate.record(5 * MIB, 0)
    assert rate.window_size_ms(0) == 10_000  # not 0: the first request is not a flood
    assert rate.measure(0) == pytest.approx(0.5 * MIB)
    assert rate.window_size_ms(2500) == 10_500  # 2.5 s + the 8 missing whole windows
    assert rate.window_size_ms(10_500) == 10_500  # 10 whole windows: the time itself


@pytest.mark.spec("QUOTA-5")
def test_samples_rotate_and_expire_after_samples_times_window():
    rate = Rate(11, 1000)
    rate.record(10 * MIB, 0)
    for second in range(1, 11):
        rate.record(0, second * 1000)  # one sample per second
    assert rate.total(10_999) == 10 * MIB
    assert rate.total(11_000) == 0  # the first sample is 11 windows old: reset
    assert len(rate.samples) == 11


@pytest.mark.spec("QUOTA-5")
def test_the_burst_a_quota_lets_through_is_ten_windows_worth():
    manager = ClientQuotaManager("Produce", "producer_byte_rate", 11, 1)
    manager.overrides = {QuotaEntity(None, "app"): MIB}
    assert manager.max_value_in_window("", "app") == 10 * MIB
    assert manager.record_and_get_throttle_ms("", "app", 10 * MIB, 0) == 0  # exactly T
    assert manager.record_and_get_throttle_ms("", "app", MIB // 100, 0) == 10  # 1 % of 10 s / 10


@pytest.mark.spec("QUOTA-6")
def test_throttle_time_is_the_excess_over_the_quota_times_the_window():
    manager = ClientQuotaManager("Produce", "producer_byte_rate", 11, 1)
    manager.overrides = {QuotaEntity(None, "app"): MIB}
    # 15 MiB over a 10 s window: O = 1.5 MiB/s, T = 1 MiB/s -> X = 0.5 * 10 s
    assert manager.record_and_get_throttle_ms("", "app", 15 * MIB, 0) == 5000
    # 12 s later the sample has expired: within quota again
    assert manager.record_and_get_throttle_ms("", "app", MIB, 12_000) == 0


@pytest.mark.spec("QUOTA-6")
def test_the_request_quota_throttles_at_most_one_window():
    quotas = QuotaManagers(11, 1)
    quotas.replace({QuotaEntity(None, "app"): {"request_percentage": 1.0}})
    # 5 s of handler time = 500 % over a 10 s window: X would be 49 s; capped at 1 s
    assert quotas.request.record_and_get_throttle_ms("", "app", 500.0 * 10, 0) == 1000


@pytest.mark.spec("QUOTA-6")
def test_no_quota_of_a_type_records_nothing():
    quotas = QuotaManagers(11, 1)
    quotas.replace({QuotaEntity(None, "app"): {"consumer_byte_rate": MIB}})
    assert quotas.produce.record_and_get_throttle_ms("", "app", 100 * MIB, 0) == 0
    assert not quotas.produce.sensors  # not even a sensor
    assert quotas.fetch.record_and_get_throttle_ms("", "app", 100 * MIB, 0) > 0


@pytest.mark.spec("QUOTA-6")
def test_a_quota_change_applies_to_the_next_record_with_the_samples_kept():
    quotas = QuotaManagers(11, 1)
    quotas.replace({QuotaEntity(None, "app"): {"producer_byte_rate": 10 * MIB}})
    assert quotas.produce.record_and_get_throttle_ms("", "app", 20 * MIB, 0) == 0
    quotas.replace({QuotaEntity(None, "app"): {"producer_byte_rate": MIB}})
    assert quotas.produce.record_and_get_throttle_ms("", "app", 0, 1) > 0  # 2 MiB/s now


def test_unrecord_takes_a_value_back():
    manager = ClientQuotaManager("Fetch", "consumer_byte_rate", 11, 1)
    manager.overrides = {QuotaEntity(None, "app"): MIB}
    assert manager.record_and_get_throttle_ms("", "app", 20 * MIB, 0) > 0
    manager.unrecord("", "app", 20 * MIB, 0)
    assert manager.record_and_get_throttle_ms("", "app", MIB, 0) == 0


def test_avg_is_the_mean_of_the_recorded_values():
    avg = Avg(2, 30_000)
    assert avg.measure(0) == 0.0
    avg.record(100, 0)
    avg.record(300, 10)
    assert avg.measure(20) == 200
