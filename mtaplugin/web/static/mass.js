// Progressive enhancement of the mass subscription form: the addresses go in chunks,
// with a progress bar.  Without JavaScript the form posts them all at once.  The chunks
// name their batch, and the last one says so: the owners get one notice for the batch
// (manage/subscriptions/batches.py), also when a chunk is refused and the rest not sent.
"use strict";
(function () {
  const form = document.getElementById("mass-form");
  if (!form || !window.fetch) return;
  const CHUNK = 200;
  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    const bar = document.getElementById("mass-progress");
    const status = document.getElementById("mass-status");
    const lines = form.elements.addresses.value.split("\n").filter((l) => l.trim());
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    bar.hidden = false;
    bar.max = lines.length || 1;
    bar.value = 0;
    const batch = window.crypto && crypto.randomUUID
      ? crypto.randomUUID()
      : Date.now().toString(16) + "-" + Math.random().toString(16).slice(2);
    function send(addresses, last) {
      const body = new URLSearchParams();
      body.set("csrf_token", form.elements.csrf_token.value);
      body.set("op", form.elements.op.value);
      body.set("addresses", addresses);
      body.set("confirm_name", form.elements.confirm_name.value);
      body.set("batch", batch);
      if (last) body.set("last", "1");
      if (form.elements.quiet.checked) body.set("quiet", "1");
      return fetch(form.action, {
        method: "POST", body: body, headers: { "Accept": "application/json" },
        credentials: "same-origin",
      });
    }
    let done = 0, already = 0, refused = [];
    for (let i = 0; i < lines.length; i += CHUNK) {
      const last = i + CHUNK >= lines.length;
      const resp = await send(lines.slice(i, i + CHUNK).join("\n"), last);
      const result = await resp.json();
      if (!resp.ok) {
        // the owners' notice of the chunks that went through
        if (!last && i > 0) await send("", true);
        status.textContent = result.errors.join("; ");
        status.className = "error";
        button.disabled = false;
        return;
      }
      done += result.done;
      already += result.already;
      refused = refused.concat(result.refused || []);
      bar.value = Math.min(lines.length, i + CHUNK);
      status.textContent = bar.value + " / " + lines.length;
    }
    status.className = "message";
    status.textContent = form.elements.op.value === "subscribe"
      ? "Subscribed " + done + "; " + already + " were members already."
      : "Unsubscribed " + done + "; " + already + " were not members.";
    if (refused.length) status.textContent += " Refused (banned): " + refused.join(", ") + ".";
    button.disabled = false;
  });
})();
