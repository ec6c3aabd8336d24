"""The docs hook that embeds spec rules and source code into concept pages."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from kafka_ref.tools.docs_embed import expand_ids, on_page_markdown, source_of, spec_rules


def page(src_uri: str = "log.md"):
    return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri))


def test_rule_ranges_expand_and_bad_ranges_are_refused():
    assert expand_ids(["LOG-3", "SEG-1..SEG-3"]) == ["LOG-3", "SEG-1", "SEG-2", "SEG-3"]
    with pytest.raises(PluginError):
        expand_ids(["LOG-5..SEG-7"])
    with pytest.raises(PluginError):
        expand_ids(["LOG-5..LOG-2"])


def test_a_rule_embeds_as_a_box_with_its_text_and_a_link_relative_to_the_page():
    title, body, spec_file = spec_rules()["LOG-3"]
    out = on_page_markdown("before\n{{ rules LOG-3 }}\nafter", page("api/log.md"), None, None)
    assert f'!!! note "LOG-3 {title}"' in out
    assert body.splitlines()[0] in out
    assert f"(../spec/{spec_file})" in out
    assert out.startswith("before\n") and out.endswith("\nafter")


def test_code_embeds_the_current_source_of_a_method():
    out = on_page_markdown("{{ code kafka_ref/log/log.py Log.segment_for }}", page(), None, None)
    assert "def segment_for(self, offset: int)" in out
    assert out.count("```") == 2
    assert source_of("kafka_ref/log/log.py", "Log.segment_for").startswith("def segment_for")


@pytest.mark.parametrize(
    "marker",
    [
        "{{ rules LOG-999 }}",
        "{{ code kafka_ref/log/log.py Log.no_such_method }}",
        "{{ code kafka_ref/log/no_such_file.py Log }}",
        "{{ code kafka_ref/log/log.py }}",
    ],
)
def test_a_name_that_does_not_exist_stops_the_build(marker):
    with pytest.raises(PluginError):
        on_page_markdown(marker, page(), None, None)
