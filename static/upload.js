// Meal forms with JavaScript: check the fields before sending, make the
// photo small in the browser (a phone on a slow network sends 300 KB
// rather than 3 MB), show upload progress, and turn several camera-roll
// photos into meals at once. Without this file the forms post as they
// are and the server does the same work.
(function () {
  "use strict";
  var MAX_SIDE = 2048;          // long edge sent, as the server's display copy
  var MAX_CANVAS = 16777216;    // pixels; Safari blanks larger canvases
  var QUALITY = 0.85;
  var KEEP_BYTES = 1572864;     // an image already this small and ≤ MAX_SIDE goes as it is

  // ---- JPEG metadata read in the browser --------------------------------

  // segments calls fn(marker, start, length) for each segment of a JPEG up
  // to the image data; start is the segment's payload.
  function segments(b, fn) {
    if (b.length < 4 || b[0] !== 0xFF || b[1] !== 0xD8) return;
    var i = 2;
    while (i + 4 <= b.length && b[i] === 0xFF) {
      var m = b[i + 1], n = (b[i + 2] << 8) | b[i + 3];
      if (m === 0xDA || n < 2) return;
      if (fn(m, i + 4, n - 2) === false) return;
      i += 2 + n;
    }
  }

  function ascii(b, at, n) {
    var s = "";
    for (var i = 0; i < n && at + i < b.length; i++) s += String.fromCharCode(b[at + i]);
    return s;
  }

  // hasProfile reports whether a JPEG carries an ICC profile (APP2
  // "ICC_PROFILE"): its colours are managed, perhaps wide-gamut.
  function hasProfile(b) {
    var found = false;
    segments(b, function (m, at, n) {
      if (m === 0xE2 && ascii(b, at, 12) === "ICC_PROFILE\0") { found = true; return false; }
    });
    return found;
  }

  // takenAt returns the EXIF capture time of a JPEG as
  // "2024-06-14T12:31:07" (DateTimeOriginal, else DateTime), or "".
  function takenAt(b) {
    var out = "";
    segments(b, function (m, at, n) {
      if (m !== 0xE1 || ascii(b, at, 6) !== "Exif\0\0") return;
      var t = at + 6, le = ascii(b, t, 2) === "II";
      var u16 = function (o) { return le ? b[t + o] | (b[t + o + 1] << 8) : (b[t + o] << 8) | b[t + o + 1]; };
      var u32 = function (o) { return le ? (u16(o) | (u16(o + 2) << 16)) >>> 0 : ((u16(o) << 16) | u16(o + 2)) >>> 0; };
      var found = {};
      var walk = function (ifd, depth) {
        if (depth > 2 || t + ifd + 2 > at + n) return;
        var count = u16(ifd);
        for (var k = 0; k < count; k++) {
          var e = ifd + 2 + k * 12, tag = u16(e);
          if (tag === 0x8769) walk(u32(e + 8), depth + 1); // Exif IFD
          else if ((tag === 0x9003 || tag === 0x0132) && u32(e + 4) >= 19) found[tag] = ascii(b, t + u32(e + 8), 19);
        }
      };
      walk(u32(4), 0);
      var s = found[0x9003] || found[0x0132] || "";
      var m2 = /^(\d{4}):(\d\d):(\d\d) (\d\d):(\d\d):(\d\d)$/.exec(s);
      if (m2 && +m2[1] >= 1990) out = m2[1] + "-" + m2[2] + "-" + m2[3] + "T" + m2[4] + ":" + m2[5] + ":" + m2[6];
      return false;
    });
    return out;
  }

  // ---- Downscaling -------------------------------------------------------

  function toBlob(canvas) {
    return new Promise(function (resolve) { canvas.toBlob(resolve, "image/jpeg", QUALITY); });
  }

  function blank(ctx, w, h) {
    var pts = [[0.5, 0.5], [0.25, 0.25], [0.75, 0.75], [0.25, 0.75], [0.75, 0.25]];
    for (var i = 0; i < pts.length; i++) {
      var d = ctx.getImageData(Math.floor(w * pts[i][0]), Math.floor(h * pts[i][1]), 1, 1).data;
      if (d[3] !== 0 && (d[0] | d[1] | d[2]) !== 0) return false;
    }
    return true;
  }

  // prepare returns what to send for file: {blob} a smaller JPEG drawn
  // upright at most MAX_SIDE on its long edge, or {blob: null} to send the
  // original (small already, not drawable here, wide-gamut colour the
  // canvas could not keep, or a drawing that came out blank); and taken,
  // the original's capture time, which the smaller copy no longer carries.
  async function prepare(file) {
    var bytes = new Uint8Array(await file.arrayBuffer());
    var out = { blob: null, taken: takenAt(bytes) };
    if (!window.createImageBitmap) return out;
    var bmp;
    try {
      bmp = await createImageBitmap(file, { imageOrientation: "from-image" });
    } catch (e) {
      return out; // HEIC in Chrome, and anything else it cannot draw
    }
    var w = bmp.width, h = bmp.height, scale = Math.min(1, MAX_SIDE / Math.max(w, h));
    if (scale === 1 && file.size <= KEEP_BYTES) return out;
    var wide = hasProfile(bytes);
    var make = function (cw, ch) {
      var c = document.createElement("canvas");
      c.width = cw; c.height = ch;
      var ctx = c.getContext("2d", wide ? { colorSpace: "display-p3" } : {});
      if (!ctx) return null;
      ctx.imageSmoothingEnabled = true;
      ctx.imageSmoothingQuality = "high";
      return { canvas: c, ctx: ctx };
    };
    // Halve in steps while the source is far larger than the target: one
    // big step loses detail, and a step canvas must stay under MAX_CANVAS.
    var src = bmp, sw = w, sh = h;
    var tw = Math.max(1, Math.round(w * scale)), th = Math.max(1, Math.round(h * scale));
    while (sw > tw * 2 && sh > th * 2) {
      var hw = Math.ceil(sw / 2), hh = Math.ceil(sh / 2);
      if (hw * hh > MAX_CANVAS) { hw = Math.floor(Math.sqrt(MAX_CANVAS * sw / sh)); hh = Math.floor(hw * sh / sw); }
      var step = make(hw, hh);
      if (!step) return out;
      step.ctx.drawImage(src, 0, 0, hw, hh);
      src = step.canvas; sw = hw; sh = hh;
    }
    var dst = make(tw, th);
    if (!dst) return out;
    if (wide && (!dst.ctx.getContextAttributes || dst.ctx.getContextAttributes().colorSpace !== "display-p3")) return out;
    dst.ctx.drawImage(src, 0, 0, tw, th);
    if (bmp.close) bmp.close();
    if (blank(dst.ctx, tw, th)) return out;
    var blob = await toBlob(dst.canvas);
    if (!blob || blob.size >= file.size) return out;
    // A wide-gamut photo must stay tagged, or its colours are clipped.
    if (wide && !hasProfile(new Uint8Array(await blob.arrayBuffer()))) return out;
    out.blob = blob;
    return out;
  }

  // ---- Field checks (the server's rules and words, from the page) --------

  function plainDecimal(s) { return /^(?=.*\d)\d*[.,]?\d*$/.test(s); }

  function fieldError(input) {
    var v = input.value.trim(), d = input.dataset;
    if (v === "") return "";
    if (d.check === "scale") return /^[1-5]$/.test(v) ? "" : d.msgNumber;
    if (v[0] === "-" && plainDecimal(v.slice(1))) return d.msgNegative;
    if (!plainDecimal(v)) return d.msgNumber;
    var frac = v.split(/[.,]/)[1] || "";
    if (frac.replace(/0+$/, "").length > 1) return d.msgPrecise;
    if (parseFloat(v.replace(",", ".")) > parseFloat(d.max)) return d.msgLarge;
    return "";
  }

  function showError(input, msg) {
    var id = input.id + "-err", p = document.getElementById(id);
    if (!msg) {
      input.removeAttribute("aria-invalid");
      if (p && p.dataset.client) p.remove();
      return;
    }
    if (!p) {
      p = document.createElement("p");
      p.className = "field-err";
      p.id = id;
      p.dataset.client = "1";
      input.insertAdjacentElement("afterend", p);
    }
    p.textContent = msg;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", id);
  }

  function chosenFile(form) {
    var f = null;
    form.querySelectorAll("input[type=file][name=photo]").forEach(function (i) {
      if (i.files && i.files.length) f = i.files[0];
    });
    return f;
  }

  // check runs the checks; it returns true if the form may be sent.
  function check(form) {
    var first = null;
    form.querySelectorAll("input[data-check]").forEach(function (input) {
      var msg = fieldError(input);
      showError(input, msg);
      if (msg && !first) first = input;
    });
    var top = form.parentNode.querySelector(".form-err.client");
    if (top) top.remove();
    if (first) {
      var box = first.closest("details");
      if (box) box.open = true;
      first.focus();
      return false;
    }
    var empty = !chosenFile(form) && !form.querySelector("input[name=pending]") &&
      !form.querySelector("img.current") && form.notes.value.trim() === "" &&
      Array.prototype.every.call(form.querySelectorAll("input[data-check]"), function (i) { return i.value.trim() === ""; }) &&
      !form.querySelector(".scale input:checked:not([value=''])");
    if (empty && form.dataset.msgEmpty) {
      var p = document.createElement("p");
      p.className = "form-err client";
      p.setAttribute("role", "alert");
      p.textContent = form.dataset.msgEmpty;
      form.insertAdjacentElement("beforebegin", p);
      return false;
    }
    return true;
  }

  // ---- Sending -----------------------------------------------------------

  // send posts fd to url with progress, marked as the page script's
  // (X-Ndiro-Upload), and resolves to the XMLHttpRequest when it ends.
  function send(url, fd, onProgress, batch) {
    return new Promise(function (resolve, reject) {
      var xhr = new XMLHttpRequest();
      xhr.open("POST", url);
      xhr.setRequestHeader("X-Ndiro-Upload", batch ? "2" : "1");
      xhr.upload.addEventListener("progress", function (ev) {
        if (ev.lengthComputable && onProgress) onProgress(ev.loaded / ev.total);
      });
      xhr.addEventListener("load", function () { resolve(xhr); });
      xhr.addEventListener("error", function () { reject(new Error("network")); });
      xhr.send(fd);
    });
  }

  // signinOf returns where to sign in again if the session ended (signed
  // out in another tab, or the account was disabled), or "".
  function signinOf(xhr) {
    if (xhr.status !== 401) return "";
    try { return JSON.parse(xhr.responseText).signin || ""; } catch (e) { return ""; }
  }

  // signinNote says the session ended, with a link that signs in again in
  // a new tab, so the form here and all it holds stay.
  function signinNote(el, to) {
    el.textContent = "You are signed out (perhaps in another tab). ";
    var a = document.createElement("a");
    a.href = to;
    a.target = "_blank";
    a.rel = "noopener";
    a.textContent = "Sign in again in a new tab";
    el.appendChild(a);
    el.appendChild(document.createTextNode(", then press Save here: nothing you typed is lost."));
  }

  function pageOf(xhr) {
    if (xhr.status !== 200) return "";
    try { return JSON.parse(xhr.responseText).location || ""; } catch (e) { return ""; }
  }

  function retryAfter(xhr) {
    var s = parseInt(xhr.getResponseHeader("Retry-After") || "", 10);
    return isNaN(s) ? 5 : Math.min(Math.max(s, 1), 120);
  }

  // withPhoto puts the photo to send into fd: the smaller copy if one was
  // made, and its capture time.
  async function withPhoto(fd, file) {
    fd.delete("photo");
    if (!file) return;
    var p = await prepare(file);
    if (p.blob) fd.append("photo", p.blob, file.name.replace(/\.[^.]*$/, "") + ".jpg");
    else fd.append("photo", file, file.name);
    if (p.taken) fd.set("taken", p.taken);
  }

  // ---- Date and time from the photo --------------------------------------

  function localDate(d) { return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()); }

  // initFromPhoto returns what fills a new meal's date and time from a
  // chosen photo's capture time ("2024-06-14T12:31:07", or "" for none),
  // while the person has not changed them, and says so beside them; or
  // null on a form that is not for a new meal (an edit is never moved by
  // its photo). On a form for one day (the day's "+") only a photo of
  // that day sets the time. A capture time more than a day ahead (a
  // camera clock set wrong) is left out, as the server would refuse it.
  function initFromPhoto(form) {
    var dd = form.querySelector("input[name=default_date]"), dt = form.querySelector("input[name=default_time]");
    var date = form.querySelector("#date"), time = form.querySelector("#time");
    var note = form.querySelector("#from-photo");
    if (!dd || !dt || !date || !time || !note) return null;
    var fixed = !!form.querySelector("input[name=fixed_date]");
    var kinds = form.querySelectorAll("input[name=kind]");
    var filled = null, kindTouched = false;
    kinds.forEach(function (k) { k.addEventListener("change", function () { kindTouched = true; }); });
    function untouched() {
      if (filled) return date.value === filled.date && time.value === filled.time;
      return date.value === dd.value && time.value === dt.value;
    }
    function setKind(hhmm) {
      if (kindTouched) return;
      var k = kindAt(+hhmm.slice(0, 2));
      kinds.forEach(function (r) { r.checked = r.value === k; });
    }
    function useNow() {
      date.value = dd.value;
      time.value = dt.value;
      filled = null;
      note.hidden = true;
      setKind(dt.value);
    }
    [date, time].forEach(function (el) {
      el.addEventListener("input", function () {
        if (filled && !untouched()) { filled = null; note.hidden = true; }
      });
    });
    note.querySelector(".use-now").addEventListener("click", function () { useNow(); time.focus(); });
    return function (taken) {
      if (!untouched()) return;
      var d = taken.slice(0, 10), t = taken.slice(11, 16);
      var ahead = new Date();
      ahead.setDate(ahead.getDate() + 1);
      if (!taken || (fixed && d !== dd.value) || d > localDate(ahead)) {
        if (filled) useNow(); // another photo, without a usable time
        return;
      }
      date.value = d;
      time.value = t;
      filled = { date: d, time: t };
      setKind(t);
      note.hidden = false;
    };
  }

  // headTaken reads the capture time from the start of file, where a
  // JPEG keeps its EXIF; "" if there is none.
  async function headTaken(file) {
    try {
      return takenAt(new Uint8Array(await file.slice(0, 262144).arrayBuffer()));
    } catch (e) {
      return "";
    }
  }

  function initMealForm(form) {
    var note = form.querySelector("[data-picked]");
    var preview = form.querySelector("img.preview");
    var fromPhoto = initFromPhoto(form);
    form.querySelectorAll("input[type=file][name=photo]").forEach(function (input) {
      input.addEventListener("change", async function () {
        if (!input.files || !input.files.length) return;
        form.querySelectorAll("input[type=file][name=photo]").forEach(function (other) {
          if (other !== input) other.value = ""; // one photo per meal
        });
        if (note) note.textContent = "Chosen: " + input.files[0].name;
        if (preview && window.URL) {
          preview.src = URL.createObjectURL(input.files[0]);
          preview.hidden = false;
        }
        if (fromPhoto) fromPhoto(await headTaken(input.files[0]));
      });
    });
    form.querySelectorAll("input[data-check]").forEach(function (input) {
      // A message goes as soon as the field is right (while typing, so the
      // page does not shift under a click on Save) and comes when it is
      // left wrong.
      input.addEventListener("input", function () { if (!fieldError(input)) showError(input, ""); });
      input.addEventListener("change", function () { showError(input, fieldError(input)); });
    });
    var status = form.querySelector(".upload-status");
    var bar = form.querySelector("progress.upload");
    var text = form.querySelector(".upload-text");
    var button = form.querySelector("button[type=submit]");
    var say = function (msg) { status.hidden = false; text.textContent = msg; };
    form.addEventListener("submit", async function (e) {
      if (!check(form)) { e.preventDefault(); return; }
      if (!window.FormData || !window.XMLHttpRequest || !status) return;
      e.preventDefault();
      button.disabled = true;
      button.classList.add("busy");
      var fd = new FormData(form);
      var file = chosenFile(form);
      try {
        if (file) say("Preparing the photo…");
        await withPhoto(fd, file);
        for (;;) {
          bar.value = 0;
          say(file ? "Uploading… 0 %" : "Saving…");
          var xhr = await send(form.action, fd, function (f) {
            bar.value = Math.round(f * 100);
            say("Uploading… " + Math.round(f * 100) + " %");
          });
          var to = pageOf(xhr);
          if (to) { say("Saved."); window.location.assign(to); return; }
          var signin = signinOf(xhr);
          if (signin) {
            button.disabled = false;
            button.classList.remove("busy");
            status.hidden = false;
            signinNote(text, signin);
            return;
          }
          if (xhr.status === 429 || xhr.status === 503 || xhr.status === 507) {
            var wait = retryAfter(xhr);
            // 507: the server's disk is full and nothing was saved; the
            // form stays as it is and goes again by itself.
            say(xhr.status === 507 ?
              "Not saved: the server's disk is full. Everything you typed, and the photo, is still here; trying again in " + wait + " s…" :
              "Busy; trying again in " + wait + " s…");
            await new Promise(function (r) { setTimeout(r, wait * 1000); });
            continue;
          }
          // A page with a message (a refused photo, a bad field, a
          // conflict): show it; it keeps what was typed, and the photo.
          document.open();
          document.write(xhr.responseText);
          document.close();
          return;
        }
      } catch (err) {
        button.disabled = false;
        button.classList.remove("busy");
        say("The upload failed: check your connection, then press Save again. Everything you typed is still here.");
      }
    });
  }

  // ---- Several photos at once -------------------------------------------

  // photoKind names a file's format from its first bytes ("" for one the
  // server refuses), as the server judges it.
  function photoKind(b) {
    if (b[0] === 0xFF && b[1] === 0xD8 && b[2] === 0xFF) return "jpeg";
    if (ascii(b, 0, 8) === "\x89PNG\r\n\x1a\n") return "png";
    if (ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 4) === "WEBP") return "webp";
    return "";
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function kindAt(hour) {
    if (hour >= 5 && hour < 11) return "breakfast";
    if (hour >= 11 && hour < 15) return "lunch";
    if (hour >= 17 && hour < 22) return "dinner";
    return "snack";
  }

  function initBackfill(section) {
    var box = section.querySelector(".js-only");
    var input = section.querySelector("#backfill-photos");
    var list = section.querySelector(".backfill-list");
    var save = section.querySelector(".backfill-save");
    var form = document.querySelector("form.meal-form");
    if (!box || !input || !list || !save || !form || !window.FormData) return;
    box.hidden = false;
    var noJS = section.querySelector(".no-js");
    if (noJS) noJS.hidden = true;
    var items = [];
    input.addEventListener("change", async function () {
      list.textContent = "";
      items = [];
      for (var i = 0; i < input.files.length; i++) {
        var file = input.files[i];
        var head = new Uint8Array(await file.arrayBuffer());
        if (!photoKind(head)) {
          var skip = document.createElement("li");
          skip.className = "backfill-item skipped";
          skip.textContent = file.name + ": not a JPEG, PNG or WebP photo, so it is left out" +
            (ascii(head, 4, 4) === "ftyp" ? " (HEIC: export it as JPEG first)." : ".");
          list.appendChild(skip);
          continue;
        }
        var taken = takenAt(head);
        var li = document.createElement("li");
        li.className = "backfill-item";
        var date = taken ? taken.slice(0, 10) : "", time = taken ? taken.slice(11, 16) : "";
        var kind = taken ? kindAt(+taken.slice(11, 13)) : "snack";
        li.innerHTML =
          '<img alt="" width="96" height="96">' +
          '<div class="row"><label>Date <input type="date" name="date" required></label>' +
          '<label>Time <input type="time" name="time" required></label>' +
          '<label>Meal <select name="kind"></select></label></div>' +
          '<p class="muted small state"></p>' +
          '<button type="button" class="secondary remove">Leave out</button>';
        li.querySelector("img").src = URL.createObjectURL(file);
        li.querySelector("img").alt = "Photo " + (i + 1) + ": " + file.name;
        li.querySelector("input[name=date]").value = date;
        li.querySelector("input[name=time]").value = time;
        var sel = li.querySelector("select");
        ["breakfast", "lunch", "dinner", "snack", "drink"].forEach(function (k) {
          var o = document.createElement("option");
          o.value = o.textContent = k;
          o.selected = k === kind;
          sel.appendChild(o);
        });
        li.querySelector(".state").textContent = taken ? "Taken " + date + " " + time + "." : "No capture time in this photo: when was it?";
        list.appendChild(li);
        var item = { file: file, li: li, taken: taken };
        items.push(item);
        li.querySelector(".remove").addEventListener("click", function (it) {
          return function () {
            if (it.done) return;
            items = items.filter(function (x) { return x !== it; });
            it.li.remove();
            save.hidden = items.length === 0;
          };
        }(item));
      }
      save.hidden = items.length === 0;
    });
    save.addEventListener("click", async function () {
      var missing = items.filter(function (it) {
        return !it.li.querySelector("input[name=date]").value || !it.li.querySelector("input[name=time]").value;
      });
      if (missing.length) {
        missing[0].li.querySelector("input[name=date]").focus();
        missing.forEach(function (it) { it.li.querySelector(".state").textContent = "Give this photo a date and time first."; });
        return;
      }
      save.disabled = true;
      var last = "", failed = false;
      var lastToSend = -1;
      items.forEach(function (it, k) { if (!it.done) lastToSend = k; });
      for (var i = 0; i < items.length; i++) {
        var it = items[i], state = it.li.querySelector(".state");
        if (it.done) continue;
        // The last of a run that went well brings the flash, counting
        // every meal of the batch; the others' pages are not opened.
        var closing = i === lastToSend && !failed;
        var fd = new FormData();
        if (closing && items.length > 1) fd.set("batch", String(items.length));
        fd.set("date", it.li.querySelector("input[name=date]").value);
        fd.set("time", it.li.querySelector("input[name=time]").value);
        fd.set("kind", it.li.querySelector("select").value);
        var tz = form.querySelector("input[name=tz]");
        if (tz && tz.value) fd.set("tz", tz.value);
        state.textContent = "Preparing…";
        try {
          await withPhoto(fd, it.file);
          if (it.taken) fd.set("taken", it.taken);
          for (;;) {
            var xhr = await send(form.action, fd, function (f) { state.textContent = "Uploading… " + Math.round(f * 100) + " %"; }, !closing);
            var to = pageOf(xhr);
            if (to) { it.done = true; last = to; state.textContent = "Saved."; it.li.classList.add("saved"); break; }
            var signin = signinOf(xhr);
            if (signin) { signinNote(state, signin); save.disabled = false; return; }
            if (xhr.status === 429 || xhr.status === 503 || xhr.status === 507) {
              var wait = retryAfter(xhr);
              state.textContent = (xhr.status === 507 ? "Not saved yet: the server's disk is full; trying again in " : "Busy; trying again in ") + wait + " s…";
              await new Promise(function (r) { setTimeout(r, wait * 1000); });
              continue;
            }
            var doc = new DOMParser().parseFromString(xhr.responseText, "text/html");
            var why = doc.querySelector("#photo-err") || doc.querySelector(".field-err") || doc.querySelector("#form-err") || doc.querySelector("main p");
            state.textContent = "Not saved: " + (why ? why.textContent.trim() : "status " + xhr.status);
            failed = true;
            break;
          }
        } catch (err) {
          failed = true;
          state.textContent = "The upload failed: check your connection and press Save again.";
        }
      }
      save.disabled = false;
      if (items.every(function (it) { return it.done; }) && last) window.location.assign(last);
    });
  }

  function init() {
    document.querySelectorAll("form.meal-form").forEach(initMealForm);
    var bf = document.getElementById("backfill");
    if (bf) initBackfill(bf);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
