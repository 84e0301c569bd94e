// Draws the get_task_graph answer embedded in the page (#task-graph-data) with Cytoscape.
// Ready and blocked come from the server's lists, so the picture and the lists agree, and
// every task the lists name is drawn even if the node list left it out (one node per id).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("task-graph-data").textContent);
  var urls = JSON.parse(document.getElementById("task-graph-urls").textContent);
  var ready = new Set(data.readyTasks.map(function (n) { return n.taskId; }));
  var blocked = new Set(data.blockedTasks.map(function (n) { return n.taskId; }));
  var focus = data.focus && data.focus.task ? data.focus.task.taskId : null;
  // Force-directed layout while it stays quick; beyond that a grid (O(n)).
  var FORCE_LAYOUT_LIMIT = 400;

  function category(node) {
    if (node.status === "completed") { return "completed"; }
    if (blocked.has(node.taskId)) { return "blocked"; }
    if (ready.has(node.taskId)) { return "ready"; }
    return node.status || "pending";  // in_progress, archived, pending that is neither
  }
  var colours = {ready: "#2e7d32", blocked: "#c62828", in_progress: "#1565c0",
                 completed: "#757575", pending: "#8d6e63", archived: "#bdbdbd"};
  var edgeStyles = {blocks: "solid", depends_on: "dashed", related_to: "dotted", parent_of: "solid"};

  var byId = new Map();
  data.nodes.concat(data.readyTasks, data.blockedTasks).forEach(function (n) {
    if (!byId.has(n.taskId)) { byId.set(n.taskId, n); }
  });
  data.edges.forEach(function (e) {  // an edge to a task outside the lists still has an end
    [e.from, e.to].forEach(function (id) {
      if (!byId.has(id)) { byId.set(id, {taskId: id, name: "", status: "pending"}); }
    });
  });
  var nodes = Array.from(byId.values());
  var elements = nodes.map(function (n) {
    return {data: {id: n.taskId, label: n.taskId + (n.name ? "\n" + n.name : ""),
                   category: category(n), focus: n.taskId === focus ? 1 : 0,
                   orphaned: n.orphaned ? 1 : 0}};
  }).concat(data.edges.map(function (e, i) {
    return {data: {id: "e" + i, source: e.from, target: e.to, type: e.type,
                   label: e.type + (e.reason ? ": " + e.reason : "")}};
  }));

  var PADDING = 30;
  var userMoved = false;  // once the operator zooms or pans, a resize keeps their view
  function fitAll() { cy.fit(undefined, PADDING); }
  function laidOut() {
    fitAll();
    window.taskGraphReady = true;  // the browser tests wait for this
  }
  var layout = nodes.length > FORCE_LAYOUT_LIMIT
    ? {name: "grid", avoidOverlap: true, fit: false, stop: laidOut}
    : {name: "cose", animate: false, fit: false, randomize: false,
       nodeDimensionsIncludeLabels: true, componentSpacing: 60, nodeRepulsion: 8000,
       idealEdgeLength: 80, numIter: 1000, stop: laidOut};
  var LABEL_PX = 13;
  function nodeFont() { return Math.min(Math.max(LABEL_PX / (cy ? cy.zoom() : 1), 10), 32); }
  function edgeFont() { return Math.min(Math.max((LABEL_PX - 2) / (cy ? cy.zoom() : 1), 8), 26); }
  var cy = cytoscape({
    container: document.getElementById("task-graph"),
    elements: elements,
    layout: {name: "preset"},  // the real layout runs below, once `cy` exists for its stop
    minZoom: 0.05,
    maxZoom: 4,
    wheelSensitivity: 0.3,
    style: [
      {selector: "node", style: {"label": "data(label)", "text-wrap": "wrap",
        "text-max-width": function () { return nodeFont() * 12; }, "font-size": nodeFont,
        "text-valign": "bottom",
        "background-color": function (ele) { return colours[ele.data("category")] || "#999"; }}},
      {selector: "node[orphaned = 1]", style: {"border-width": 3, "border-style": "dashed",
        "border-color": "#6a1b9a"}},
      {selector: "node[focus = 1]", style: {"border-width": 4, "border-color": "#ffb300"}},
      {selector: "edge", style: {"curve-style": "bezier", "target-arrow-shape": "triangle",
        "width": 2, "font-size": edgeFont, "label": "data(label)", "line-color": "#90a4ae",
        "target-arrow-color": "#90a4ae",
        "line-style": function (ele) { return edgeStyles[ele.data("type")] || "solid"; }}},
      {selector: "edge[type = 'blocks']", style: {"line-color": "#c62828",
        "target-arrow-color": "#c62828"}}
    ]
  });
  cy.on("scrollzoom pinchzoom dragpan", function () { userMoved = true; });
  // Labels readable at any zoom: 13 px on screen (the page's text size), so a fitted graph
  // does not shrink them to 6 px; at very low zoom (hundreds of tasks) they stop growing in
  // the graph's own units, so they shrink rather than cover each other.
  cy.on("zoom", function () { cy.style().update(); });
  // The container can change size after the first layout (a scrollbar appearing, the
  // window resized): keep everything in view until the operator takes over.
  if (window.ResizeObserver) {
    new ResizeObserver(function () {
      cy.resize();
      if (!userMoved) { fitAll(); }
    }).observe(document.getElementById("task-graph"));
  }
  cy.on("tap", "node", function (evt) {
    var url = urls[evt.target.id()];
    if (url) { window.location.href = url; }
  });
  document.getElementById("graph-fit").addEventListener("click", function () {
    userMoved = false;
    fitAll();
  });
  document.getElementById("graph-drawn").textContent = cy.nodes().length + " tasks drawn";
  window.taskGraph = cy;  // for the browser tests and the curious operator's console
  cy.layout(layout).run();
}());
