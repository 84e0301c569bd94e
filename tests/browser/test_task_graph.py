"""The task graph page in a real browser: every listed task is drawn, at its own place,
coloured by status; a few hundred tasks stay drawable; clicking a task opens it."""

from __future__ import annotations

import pytest

from contexts.models import TaskContext

pytestmark = pytest.mark.slow

DRAWING = """() => {
  const cy = window.taskGraph;
  const box = document.getElementById('task-graph').getBoundingClientRect();
  return cy.nodes().map(n => {
    const b = n.renderedBoundingBox({includeLabels: false});
    const p = n.renderedPosition();
    return {id: n.id(), category: n.data('category'), x: p.x, y: p.y,
            inside: b.x1 >= -1 && b.y1 >= -1 && b.x2 <= box.width + 1 && b.y2 <= box.height + 1,
            box: [Math.round(b.x1), Math.round(b.y1), Math.round(b.x2), Math.round(b.y2),
                  Math.round(box.width), Math.round(box.height)],
            colour: n.style('background-color')};
  });
}"""


def listed_ids(page) -> set[str]:
    links = page.locator("#ready-tasks li, #blocked-tasks li").all_inner_texts()
    return {text.split(" — ")[0].strip() for text in links if text.strip() != "none"}


def test_every_listed_task_is_drawn_and_a_click_opens_it(console, tools):
    for task_id in ("ready-1", "ready-2", "ready-3", "blocker", "waiting"):
        tools.ok("create_task", {"taskId": task_id, "name": f"Task {task_id}"})
    tools.ok("create_task", {"taskId": "doing", "name": "Doing", "status": "in_progress"})
    tools.ok("add_task_relationship", {"sourceTaskId": "blocker", "targetTaskId": "waiting",
                                       "relationshipType": "blocks"})
    page = console.open("/admin/graph/taskrelationship/task-graph/")
    page.wait_for_function("window.taskGraphReady === true")
    listed = listed_ids(page)
    assert {"ready-1", "ready-2", "ready-3", "blocker", "waiting"} <= listed
    drawn = {n["id"]: n for n in page.evaluate(DRAWING)}
    assert listed <= set(drawn)
    assert set(drawn) == {"ready-1", "ready-2", "ready-3", "blocker", "waiting", "doing"}
    assert [n for n in drawn.values() if not n["inside"]] == []
    assert len({(round(n["x"]), round(n["y"])) for n in drawn.values()}) == len(drawn)
    assert drawn["waiting"]["category"] == "blocked" and drawn["ready-2"]["category"] == "ready"
    assert drawn["doing"]["category"] == "in_progress"
    assert drawn["waiting"]["colour"] != drawn["ready-2"]["colour"]
    assert console.text("#graph-drawn") == "6 tasks drawn"
    console.screenshot("small-graph")

    box = page.locator("#task-graph").bounding_box()
    target = drawn["ready-2"]
    page.mouse.click(box["x"] + target["x"], box["y"] + target["y"])
    page.wait_for_url("**/admin/contexts/taskcontext/*/change/")
    pk = TaskContext.objects.get(task_id="ready-2").pk
    assert page.url.endswith(f"/admin/contexts/taskcontext/{pk}/change/")


def test_a_few_hundred_tasks_are_all_drawn_with_pan_and_zoom(console, tools, settings):
    # Created in one INSERT (the versioning trigger still runs per row); the graph is read
    # from Postgres, which is where these rows are without a mirror sync.
    settings.ENABLE_NEO4J = False
    TaskContext.objects.bulk_create([
        TaskContext(task_id=f"bulk-{i:03d}", name=f"Bulk {i}",
                    status=("pending", "in_progress", "completed", "blocked")[i % 4])
        for i in range(300)])
    for i in range(0, 40, 4):  # some edges, so it is a graph and not a grid of dots
        tools.ok("add_task_relationship", {"sourceTaskId": f"bulk-{i + 1:03d}",
                                           "targetTaskId": f"bulk-{i + 4:03d}",
                                           "relationshipType": "blocks"})
    page = console.open("/admin/graph/taskrelationship/task-graph/?includeCompleted=on")
    page.wait_for_function("window.taskGraphReady === true", timeout=60_000)
    drawn = page.evaluate(DRAWING)
    assert len(drawn) == 300 and {n["id"] for n in drawn} >= listed_ids(page)
    assert [n for n in drawn if not n["inside"]] == []
    console.screenshot("large-graph")
    zoom = page.evaluate("window.taskGraph.zoom()")
    box = page.locator("#task-graph").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -400)
    page.wait_for_function(f"window.taskGraph.zoom() > {zoom}")
    pan = page.evaluate("window.taskGraph.pan()")
    page.mouse.move(box["x"] + 5, box["y"] + 5)
    page.mouse.down()
    page.mouse.move(box["x"] + 105, box["y"] + 65, steps=5)
    page.mouse.up()
    moved = page.evaluate("window.taskGraph.pan()")
    assert (moved["x"], moved["y"]) != (pan["x"], pan["y"])
    page.click("#graph-fit")
    assert [n for n in page.evaluate(DRAWING) if not n["inside"]] == []
