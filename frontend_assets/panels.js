/* Clientside callbacks of the SMARTS progress line (app/smarts_progress.py), the upload page
   (app/pages_upload.py) and the model audit section (app/audit_panel.py). They reach the REST API
   through orientscope.js's postUpload and pollRecord. */
(function () {
  "use strict";

  function orientscope() { return window.dash_clientside.orientscope; }

  // Only a view with a pattern asks the server (a page without one costs no callback). A new pattern
  // (not the one the page opened with, whose notes the layout holds) replaces the map's notes, an
  // earlier pattern's error among them, by "searching…" until the map callback answers with the new notes.
  function smartsAsk(st, asked) {
    var nu = window.dash_clientside.no_update;
    if (st && st.dataset && st.smarts) {
      var triggered = (window.dash_clientside.callback_context || {}).triggered || [];
      var opening = !triggered.length || triggered[0].prop_id === ".";
      var fresh = !opening && (!asked || asked.smarts !== st.smarts);
      var bar = { type: "Progress", namespace: "dash_html_components", props: { className: "searching-bar" } };
      var searching = { type: "P", namespace: "dash_html_components",
                        props: { children: [bar, " Searching for " + st.smarts + "…"], className: "note searching" } };
      return [{ dataset: st.dataset, smarts: st.smarts }, fresh ? [searching] : nu];
    }
    return [asked && asked.smarts ? {} : nu, nu];
  }

  async function smartsPoll(nIntervals, job) {
    var nu = window.dash_clientside.no_update;
    if (!job || !job.job_id) { return ["", true, nu]; }
    var p = await orientscope().pollRecord("/api/jobs/" + job.job_id, "SMARTS search");
    if (p.error) { return [p.error, true, nu]; }
    if (p.record.state === "done") {
      return ["SMARTS search done: " + p.record.message, true, { job_id: job.job_id, at: Date.now() }];
    }
    if (p.record.state === "failed") { return ["SMARTS search failed: " + p.record.message, true, nu]; }
    return ["SMARTS search " + p.text, false, nu];
  }

  // A new submission's status replaces the last one's at once: while the file is sent, a second audit or
  // upload showed the first one's "done".
  function sending(statusId, filename) {
    window.dash_clientside.set_props(statusId, { children: "sending " + (filename || "the file") + "…" });
  }

  // The upload page shows at /upload only (the header's link, app/dashboard.py).
  function uploadHidden(pathname) { return pathname !== "/upload"; }

  async function uploadSubmit(nClicks, contents, filename, name, format, strict, token) {
    if (!nClicks) { return window.dash_clientside.no_update; }
    if (!contents) { return { error: "Choose a file first." }; }
    sending("upload-status", filename);
    var fields = {
      name: (name || filename || "").trim(),
      format: format || "auto",
      strict: strict && strict.length ? "true" : "false"
    };
    var sent = await orientscope().postUpload("/api/datasets", contents, filename || "upload", fields, token);
    return sent.error ? sent : { job_id: sent.body.job_id, dataset_id: sent.body.dataset_id };
  }

  // The upload page's outputs; a failed upload fills its bar in the failed colour
  // (style.css .upload-failed) rather than leaving it blue where the job stopped.
  function uploadState(pct, text, finished, href, hidden, failed) {
    var bar = failed ? [100, "upload-progress upload-failed", "failed"] : [pct, "upload-progress", pct + "%"];
    return [bar[0], text, finished, href, hidden, bar[1], bar[2]];
  }

  async function uploadPoll(nIntervals, job) {
    var nu = window.dash_clientside.no_update;
    if (!job) { return uploadState(0, "", true, nu, true, false); }
    if (job.error) { return uploadState(0, job.error, true, nu, true, true); }
    var p = await orientscope().pollRecord("/api/jobs/" + job.job_id, "Job " + job.job_id);
    if (p.error) { return uploadState(0, p.error, true, nu, true, false); }
    var href = "/?dataset=" + encodeURIComponent(p.record.dataset_id);
    var state = p.record.state;
    return uploadState(p.pct, p.text, p.finished, href, state !== "done", state === "failed");
  }

  async function auditSubmit(nClicks, contents, filename, name, token, dataset) {
    if (!nClicks) { return window.dash_clientside.no_update; }
    if (!dataset) { return { error: "Choose a dataset first." }; }
    if (!contents) { return { error: "Choose a predictions file first." }; }
    sending("audit-status", filename);
    var path = "/api/datasets/" + encodeURIComponent(dataset) + "/model-audits";
    var fields = { name: (name || filename || "").trim() };
    var sent = await orientscope().postUpload(path, contents, filename || "predictions.csv", fields, token);
    return sent.error ? sent : { dataset: dataset, audit_id: sent.body.audit_id };
  }

  async function auditPoll(nIntervals, job) {
    var nu = window.dash_clientside.no_update;
    if (!job) { return ["", true, nu]; }
    if (job.error) { return [job.error, true, nu]; }
    var path = "/api/datasets/" + encodeURIComponent(job.dataset) + "/model-audits/" + job.audit_id;
    var p = await orientscope().pollRecord(path, "Audit " + job.audit_id);
    if (p.error) { return [p.error, true, nu]; }
    if (p.record.state === "done") { return ["done: audit " + p.record.id + " is ready", true, p.record.id]; }
    if (p.record.state === "failed") { return ["failed: " + p.record.message, true, nu]; }
    return [p.text, false, nu];
  }

  function component(type, props) { return { type: type, namespace: "dash_html_components", props: props }; }

  // The links of a finished export (app/downloads.py): its file, or each rotated copy, and the rotations.
  function downloadLinks(job, record) {
    var base = "/api/datasets/" + encodeURIComponent(job.dataset) + "/exports/" + job.export_id;
    var file = record.result && record.result.file ? record.result.file : "the file";
    var links = job.copies
      ? Array.from({ length: job.copies }, function (_, k) {
          return component("A", { children: "copy " + k, href: base + "?copy=" + k, download: "",
                                  className: "download-link" });
        })
      : [component("A", { children: file, href: base, download: "", className: "download-link" })];
    links.push(component("A", { children: "rotations (CSV)", href: base + "?part=rotations", download: "",
                                className: "download-link" }));
    return [component("Span", { children: "Ready (" + record.message + "): " })].concat(links);
  }

  // Follows the export job the download buttons queued: a progress bar, then the download links.
  async function downloadPoll(nIntervals, job) {
    var nu = window.dash_clientside.no_update;
    if (!job || !job.job_id) { return [nu, true]; }
    var p = await orientscope().pollRecord("/api/jobs/" + job.job_id, "Export " + job.export_id);
    if (p.error) { return [p.error, true]; }
    if (p.record.state === "done") { return [downloadLinks(job, p.record), true]; }
    if (p.record.state === "failed") { return ["The export failed: " + p.record.message, true]; }
    return [[component("Progress", { value: p.pct, max: 100, className: "download-progress" }),
             component("Span", { children: " export " + p.text })], false];
  }

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    orientscope_panels: {
      smartsAsk: smartsAsk, smartsPoll: smartsPoll, uploadHidden: uploadHidden, uploadSubmit: uploadSubmit,
      uploadPoll: uploadPoll, auditSubmit: auditSubmit, auditPoll: auditPoll, downloadPoll: downloadPoll
    }
  });
})();
