/* The selected molecule's ring on the 3D sphere: its axis points ([x, y, z] unit vectors, from
   backend/figures/mapfigure.py selected_ring) as one open-circle scatter3d trace added to the drawn plot.
   The flat views' ring is an SVG overlay (orientscope.js placeRing); a 3D scene moves with the
   camera, so there the ring must be part of the scene. A new figure from Dash drops the trace;
   placeRing runs after every plot and adds it back. */
(function () {
  "use strict";
  var RING = { symbol: "circle-open", size: 12, color: "#000000", line: { width: 3, color: "#000000" } };

  function ringIndex(gd) {
    for (var i = 0; i < gd.data.length; i += 1) {
      if (gd.data[i].meta && gd.data[i].meta.kind === "selection") { return i; }
    }
    return -1;
  }

  // Returns how many points are ringed.
  function sphereRing(gd, points) {
    var key = JSON.stringify(points);
    gd._sphereRingWanted = points;
    var at = ringIndex(gd);
    if (gd._sphereRingBusy || (at >= 0 && gd.data[at].meta.points === key) || (at < 0 && !points.length)) {
      return points.length;
    }
    gd._sphereRingBusy = true;
    var removed = at >= 0 ? window.Plotly.deleteTraces(gd, at) : Promise.resolve();
    removed.then(function () {
      if (!points.length) { return null; }
      return window.Plotly.addTraces(gd, {
        type: "scatter3d", mode: "markers", name: "selected molecule", showlegend: false, hoverinfo: "skip",
        x: points.map(function (p) { return p[0]; }), y: points.map(function (p) { return p[1]; }),
        z: points.map(function (p) { return p[2]; }), marker: RING, meta: { kind: "selection", points: key }
      });
    }).then(done, done);
    // a selection made while the trace was being replaced
    function done() { gd._sphereRingBusy = false; sphereRing(gd, gd._sphereRingWanted); }
    return points.length;
  }
  window.orientscopeSphereRing = sphereRing;
})();
