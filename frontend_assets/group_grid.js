/* The aligned-group grid (backend/figures/viewer.py group_scenes, drawn by first_paint.js drawSpec): a click on a
   cell opens that molecule as a map click does (the panel, its ring on the map, the URL), through the
   "selected" store. A press that moves more than a few pixels is a rotation of the linked grid, not a click. */
(function () {
  "use strict";
  var DRAG_PX = 4;
  var down = null;

  function gridOf(ev) { return ev.target && ev.target.closest ? ev.target.closest("#group-viewer") : null; }

  // The caption of the cell under (x, y); captions carry data-cell "row,col" and data-molecule.
  function captionAt(el, x, y) {
    var overlay = el.querySelector(".viewer-captions");
    var caps = el.querySelectorAll(".viewer-caption[data-cell]");
    if (!overlay || !caps.length) { return null; }
    var rows = 0, cols = 0;
    caps.forEach(function (cap) {
      var rc = cap.dataset.cell.split(",");
      rows = Math.max(rows, +rc[0] + 1);
      cols = Math.max(cols, +rc[1] + 1);
    });
    var box = overlay.getBoundingClientRect();
    var row = Math.floor((y - box.top) / box.height * rows), col = Math.floor((x - box.left) / box.width * cols);
    return el.querySelector('.viewer-caption[data-cell="' + row + "," + col + '"]');
  }

  // Capture phase: 3Dmol.js handles the canvas's own pointer events.
  document.addEventListener("pointerdown", function (ev) {
    down = gridOf(ev) ? { x: ev.clientX, y: ev.clientY } : null;
  }, true);
  document.addEventListener("pointerup", function (ev) {
    var el = gridOf(ev), start = down;
    down = null;
    if (!el || !start || Math.abs(ev.clientX - start.x) + Math.abs(ev.clientY - start.y) > DRAG_PX) { return; }
    var cap = captionAt(el, ev.clientX, ev.clientY);
    var clientside = window.dash_clientside;
    if (!cap || !cap.dataset.molecule || !(clientside && clientside.set_props)) { return; }
    clientside.set_props("selected", { data: cap.dataset.molecule });
  }, true);
})();
