/* OrientScope clientside functions: render 3D viewer specs (built in Python, app/viewer.py)
   with 3Dmol.js from this folder, copy the view link, export the map. No network access. */
(function () {
  "use strict";
  var VIEW_HEIGHT = 280;

  function vec(p) { return { x: p[0], y: p[1], z: p[2] }; }

  function ensureGrid(el, spec) {
    var key = spec.rows + "x" + spec.cols + ":" + spec.linked;
    if (el._grid && el._gridKey === key) {
      el._grid.forEach(function (row) { row.forEach(function (v) { v.clear(); }); });
      return el._grid;
    }
    el.innerHTML = "";
    var captions = document.createElement("div");
    captions.className = "viewer-captions";
    captions.style.gridTemplateColumns = "repeat(" + spec.cols + ", 1fr)";
    var holder = document.createElement("div");
    holder.className = "viewer-canvas";
    holder.style.position = "relative";
    holder.style.height = spec.rows * VIEW_HEIGHT + "px";
    el.appendChild(captions);
    el.appendChild(holder);
    el._grid = $3Dmol.createViewerGrid(holder, { rows: spec.rows, cols: spec.cols, control_all: !!spec.linked },
                                       { backgroundColor: "white", antialias: true });
    el._gridKey = key;
    el._captions = captions;
    return el._grid;
  }

  function renderViewer(spec, id) {
    var el = document.getElementById(id);
    if (!el) { return window.dash_clientside.no_update; }
    if (!spec || !spec.scenes || !spec.scenes.length) {
      if (el._grid) { el._grid.forEach(function (row) { row.forEach(function (v) { v.clear(); v.render(); }); }); }
      if (el._captions) { el._captions.innerHTML = ""; }
      el.removeAttribute("data-molecule");
      return null;
    }
    if (typeof $3Dmol === "undefined") {
      el.textContent = "3Dmol.js did not load";
      return null;
    }
    var grid = ensureGrid(el, spec);
    el._captions.innerHTML = "";
    var atoms = [];
    grid.forEach(function (row, r) {
      row.forEach(function (v, c) {
        var scene = spec.scenes[r * spec.cols + c];
        var cap = document.createElement("div");
        cap.textContent = scene ? scene.title : "";
        el._captions.appendChild(cap);
        if (!scene) { v.render(); return; }
        var model = v.addModel(scene.xyz, "xyz");
        v.setStyle({}, { stick: { radius: 0.14, colorscheme: "Jmol" }, sphere: { scale: 0.22, colorscheme: "Jmol" } });
        (scene.arrows || []).forEach(function (a) {
          v.addArrow({ start: vec(a.start), end: vec(a.end), radius: 0.05, color: a.color });
          v.addLabel(a.label, { position: vec(a.end), fontSize: 12, fontColor: a.color, backgroundOpacity: 0.0 });
        });
        v.zoomTo();
        v.render();
        atoms.push(model.selectedAtoms({}).length);
      });
    });
    el.dataset.molecule = spec.molecule || "";
    el.dataset.atoms = atoms.join(",");
    return spec.molecule || "";
  }

  function copyLink(n) {
    var url = window.location.href;
    var done = function () { return "link copied"; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(url).catch(function () {});
    } else {
      var t = document.createElement("textarea");
      t.value = url; document.body.appendChild(t); t.select();
      try { document.execCommand("copy"); } catch (e) { /* clipboard unavailable */ }
      document.body.removeChild(t);
    }
    window.__orientscopeCopied = url;
    return done();
  }

  function exportMap(png, svg, state) {
    var trig = window.dash_clientside.callback_context.triggered;
    var format = trig.length && trig[0].prop_id.indexOf("export-svg") === 0 ? "svg" : "png";
    var gd = document.querySelector("#orientation-map .js-plotly-plot");
    if (!gd || !window.Plotly) { return window.dash_clientside.no_update; }
    var name = "orientscope-" + ((state && state.dataset) || "map") + "-map";
    window.Plotly.downloadImage(gd, { format: format, filename: name, width: 1400, height: 760 });
    return format;
  }

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    orientscope: { renderViewer: renderViewer, copyLink: copyLink, exportMap: exportMap }
  });
})();
