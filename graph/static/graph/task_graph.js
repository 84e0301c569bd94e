// Draws the get_task_graph answer embedded in the page (#task-graph-data) with Cytoscape.
// Ready and blocked come from the server's lists, so the picture and the lists agree.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("task-graph-data").textContent);
  var ready = new Set(data.readyTasks.map(function (n) { return n.taskId; }));
  var blocked = new Set(data.blockedTasks.map(function (n) { return n.taskId; }));
  var focus = data.focus && data.focus.task ? data.focus.task.taskId : null;

  function category(node) {
    if (node.status === "completed") { return "completed"; }
    if (blocked.has(node.taskId)) { return "blocked"; }
    if (ready.has(node.taskId)) { return "ready"; }
    return node.status;  // in_progress, archived, pending that is neither
  }
  var colours = {ready: "#2e7d32", blocked: "#c62828", in_progress: "#1565c0",
                 completed: "#757575", pending: "#8d6e63", archived: "#bdbdbd"};
  var edgeStyles = {blocks: "solid", depends_on: "dashed", related_to: "dotted", parent_of: "solid"};

  var elements = data.nodes.map(function (n) {
    return {data: {id: n.taskId, label: n.taskId + "\n" + n.name, category: category(n),
                   focus: n.taskId === focus ? 1 : 0}};
  }).concat(data.edges.map(function (e, i) {
    return {data: {id: "e" + i, source: e.from, target: e.to, type: e.type,
                   label: e.type + (e.reason ? ": " + e.reason : "")}};
  }));

  cytoscape({
    container: document.getElementById("task-graph"),
    elements: elements,
    layout: {name: data.nodes.length > 300 ? "grid" : "breadthfirst", directed: true,
             spacingFactor: 1.1},
    style: [
      {selector: "node", style: {"label": "data(label)", "text-wrap": "wrap",
        "text-max-width": 140, "font-size": 10, "text-valign": "bottom",
        "background-color": function (ele) { return colours[ele.data("category")] || "#999"; }}},
      {selector: "node[focus = 1]", style: {"border-width": 4, "border-color": "#ffb300"}},
      {selector: "edge", style: {"curve-style": "bezier", "target-arrow-shape": "triangle",
        "width": 2, "font-size": 8, "label": "data(label)", "line-color": "#90a4ae",
        "target-arrow-color": "#90a4ae",
        "line-style": function (ele) { return edgeStyles[ele.data("type")] || "solid"; }}},
      {selector: "edge[type = 'blocks']", style: {"line-color": "#c62828",
        "target-arrow-color": "#c62828"}}
    ]
  }).on("tap", "node", function (evt) {
    // Refocus on the tapped task, keeping the chosen depth.
    var params = new URLSearchParams(window.location.search);
    params.set("taskId", evt.target.id());
    window.location.search = params.toString();
  });
}());
