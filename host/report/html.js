"use strict";
(function () {
  var D = JSON.parse(document.getElementById("data").textContent);
  var tip = document.getElementById("tip");
  function dec(s, f32) {
    var bin = atob(s), b = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i);
    return f32 ? new Float32Array(b.buffer) : b;
  }
  function fmt(v) { return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : v.toFixed(4); }
  // exact is a float32 value in the fewest digits that read back as it.
  function exact(v) {
    for (var p = 1; p < 9; p++) { var t = v.toPrecision(p); if (Math.fround(+t) === v) return t; }
    return v.toPrecision(9);
  }
  var fs = D.fs || 0;
  function ms(n) { return fs ? " (" + (n / fs * 1000).toFixed(2) + " ms)" : ""; }
  // cols is column n of a record: its samples [n T / B, (n+1) T / B).
  function cols(r, n) {
    if (r.B === r.T) return "sample " + n + ms(n);
    var a = Math.floor(n * r.T / r.B), b = Math.floor((n + 1) * r.T / r.B) - 1;
    return "samples " + a + ".." + b + ms(a);
  }
  // series is a line of C x B values, or when thinned its columns' minima
  // (lo) and maxima (hi).
  function series(s, r) {
    var a = dec(s, true);
    return r.B === r.T ? { lo: a, hi: a } : { lo: a.subarray(0, r.C * r.B), hi: a.subarray(r.C * r.B) };
  }
  function val(sr, i) { return sr.lo === sr.hi ? fmt(sr.lo[i]) : "min " + fmt(sr.lo[i]) + " max " + fmt(sr.hi[i]); }
  // Records grouped by (split, record): a record's panel shows every pair.
  var groups = [], byKey = {};
  D.records.forEach(function (r) {
    if (!byKey[r.key]) { byKey[r.key] = { key: r.key, split: r.sp, record: r.r, label: r.label, items: [] }; groups.push(byKey[r.key]); }
    byKey[r.key].items.push(r);
  });
  // One colour scale for every heat map: 0 .. the largest |value| of all members.
  var gmax = 0;
  D.records.forEach(function (r) { gmax = Math.max(gmax, Math.abs(r.lo), Math.abs(r.hi)); });
  var diverging = D.records.some(function (r) { return r.lo < 0; });
  var sc = document.getElementById("scale");
  if (sc) sc.textContent = diverging ? "blue -" + fmt(gmax) + " .. white 0 .. red " + fmt(gmax) : "white 0 .. dark " + fmt(gmax);
  function colour(v) {
    var t = gmax > 0 ? v / gmax : 0;
    if (diverging) {
      var a = Math.min(1, Math.abs(t));
      return t >= 0 ? [255, 255 * (1 - a), 255 * (1 - a)] : [255 * (1 - a), 255 * (1 - a), 255];
    }
    t = Math.max(0, Math.min(1, t));
    return [255 * (1 - t) + 68 * t, 255 * (1 - t) + 1 * t, 255 * (1 - t) + 84 * t];
  }
  var view = null; // [t0, t1) of the time axis, shared by the record's plots
  var cur = -1;
  function plot(parent, r, title, h, draw, hover, range, cls) {
    var T = r.B;
    var wrap = document.createElement("div"); wrap.className = "cwrap";
    var cap = document.createElement("div"); cap.className = "range"; cap.textContent = title + (range ? "  (this map: " + range + ")" : "");
    var c = document.createElement("canvas"); c.width = Math.max(400, Math.min(1100, (parent.clientWidth || 924) - 24)); c.height = h; if (cls) c.className = cls;
    wrap.appendChild(cap); wrap.appendChild(c); parent.appendChild(wrap);
    var ctx = c.getContext("2d");
    function x2t(x) { return view[0] + (view[1] - view[0]) * x / c.width; }
    function redraw() { ctx.clearRect(0, 0, c.width, c.height); draw(ctx, c.width, c.height); }
    var drag = null;
    c.addEventListener("mousedown", function (e) { drag = e.offsetX; });
    c.addEventListener("mouseup", function (e) {
      if (drag !== null && Math.abs(e.offsetX - drag) > 4) {
        var a = x2t(Math.min(drag, e.offsetX)), b = x2t(Math.max(drag, e.offsetX));
        view = [Math.floor(a), Math.max(Math.floor(a) + 2, Math.ceil(b))]; show(cur, true);
      }
      drag = null;
    });
    c.addEventListener("dblclick", function () { view = [0, T]; show(cur, true); });
    c.addEventListener("mousemove", function (e) {
      var n = Math.floor(x2t(e.offsetX)); if (n < 0 || n >= T) return;
      tip.style.display = "block"; tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px";
      tip.textContent = cols(r, n) + "\n" + hover(n, e.offsetY / c.height);
    });
    c.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    redraw();
  }
  function lines(ctx, w, h, rows, C, T, series, lo, hi, maskOf) {
    var rh = h / C;
    for (var ch = 0; ch < C; ch++) {
      var y0 = ch * rh;
      function X(n) { return (n - view[0]) / (view[1] - view[0]) * w; }
      function Y(v) { return y0 + rh - 4 - (rh - 8) * (v - lo[ch]) / ((hi[ch] - lo[ch]) || 1); }
      if (maskOf) {
        ctx.fillStyle = "rgba(255,160,0,0.25)";
        for (var n = view[0]; n < view[1]; n++) if (maskOf[ch * T + n]) ctx.fillRect(X(n), y0, Math.max(1, X(n + 1) - X(n)), rh);
      }
      function band(lo, hi, fill, stroke) {
        ctx.beginPath();
        for (var n = view[0]; n < view[1]; n++) ctx.lineTo(X(n + 0.5), Y(hi[ch * T + n]));
        for (var n = view[1] - 1; n >= view[0]; n--) ctx.lineTo(X(n + 0.5), Y(lo[ch * T + n]));
        ctx.closePath(); ctx.fillStyle = fill; ctx.fill();
        if (stroke) { ctx.strokeStyle = stroke; ctx.stroke(); }
      }
      series.forEach(function (s) {
        if (s.band) { band(s.band[0].lo, s.band[1].hi, s.colour); return; }
        if (s.y.lo !== s.y.hi) { band(s.y.lo, s.y.hi, s.colour, s.colour); return; } // thinned: min..max
        ctx.strokeStyle = s.colour; ctx.beginPath();
        for (var n = view[0]; n < view[1]; n++) ctx.lineTo(X(n + 0.5), Y(s.y.lo[ch * T + n]));
        ctx.stroke();
      });
      if (C > 1) { ctx.fillStyle = "#555"; ctx.fillText(rows[ch] || ("channel " + ch), 4, y0 + 12); }
    }
  }
  // extent is each channel's [smallest, largest] of series a (and b).
  function extent(a, C, T, b) {
    var lo = [], hi = [];
    b = b || a;
    for (var ch = 0; ch < C; ch++) {
      var l = Infinity, u = -Infinity;
      for (var n = ch * T; n < (ch + 1) * T; n++) { l = Math.min(l, a.lo[n], b.lo[n]); u = Math.max(u, a.hi[n], b.hi[n]); }
      lo.push(l); hi.push(u);
    }
    return [lo, hi];
  }
  function rangeOf(a) { var l = Infinity, u = -Infinity; for (var i = 0; i < a.lo.length; i++) { l = Math.min(l, a.lo[i]); u = Math.max(u, a.hi[i]); } return "[" + fmt(l) + ", " + fmt(u) + "]"; }
  // inUnit is " (326 V)": p.u. value v of channel ch in the recording's own unit (1 p.u. = sqrt(2) x its nominal), or "".
  function inUnit(v, ch) {
    if (!D.peakUnits || D.peakUnits[ch] === undefined) return "";
    var x = v * D.peakUnits[ch], u = D.units[ch];
    if (u === "V" && Math.abs(x) >= 1000) { x /= 1000; u = "kV"; }
    return " (" + (Math.abs(x) >= 100 ? x.toFixed(0) : x.toPrecision(3)) + " " + u + ")";
  }
  function pairPanel(root, r) {
    var C = r.C, T = r.B, thin = r.B !== r.T; // T: the columns
    var wave = series(r.wave, r), mask = r.mask ? dec(r.mask) : null, mem = dec(r.mem, true);
    var mean = series(r.mean, r), q05 = series(r.q05, r), q95 = series(r.q95, r), vr = series(r.var, r), cv = series(r.cv, r);
    var box = document.createElement("div"); box.className = "pair"; root.appendChild(box);
    var h = document.createElement("h3");
    h.textContent = r.p + " / " + r.e + ": predicted " + r.pred + " (p = " + r.prob.toFixed(4) + ")" + (r.label ? ", true class " + r.label : "");
    box.appendChild(h);
    if (r.ood) { var od = document.createElement("div"); od.className = "ood"; od.textContent = r.ood; box.appendChild(od); }
    if (r.dp && r.dp.length) {
      var dp = document.createElement("div"); dp.className = "range";
      dp.textContent = "each draw's probability of " + r.pred + ": " + r.dp.map(function (v) { return v.toFixed(3); }).join(" ");
      box.appendChild(dp);
      var cdp = document.createElement("canvas"); cdp.width = 400; cdp.height = 22; box.appendChild(cdp);
      var g = cdp.getContext("2d"); g.strokeStyle = "#999"; g.beginPath(); g.moveTo(0, 11); g.lineTo(400, 11); g.stroke();
      g.fillStyle = "#0072B2"; r.dp.forEach(function (v) { g.fillRect(v * 396, 4, 3, 14); });
      g.fillStyle = "#D55E00"; g.fillRect(r.prob * 396 - 1, 0, 5, 22);
    }
    // one y axis for every channel (a sag beside a healthy phase shows as one), in the data's units
    var ew = extent(wave, C, T), wl = Math.min.apply(null, ew[0]), wu = Math.max.apply(null, ew[1]);
    var wa = Math.max(Math.abs(wl), Math.abs(wu)) || 1, wlo = [], whi = [];
    for (var ch = 0; ch < C; ch++) { wlo.push(-wa); whi.push(wa); }
    plot(box, r, "waveform" + (D.unit ? " (" + D.unit + ", one axis for the channels)" : " (one axis for the channels)") + (mask ? " (shaded: the ground-truth mask)" : ""), 70 * C, function (ctx, w, hh) {
      lines(ctx, w, hh, r.cn, C, T, [{ y: wave, colour: "#222" }], wlo, whi, mask);
      var rh = hh / C, lw = D.peakUnits ? 92 : 34; ctx.fillStyle = "#555"; ctx.strokeStyle = "#ccc";
      for (var ch = 0; ch < C; ch++) [wa, 0, -wa].forEach(function (v) {
        var y = ch * rh + rh - 4 - (rh - 8) * (v + wa) / (2 * wa);
        ctx.beginPath(); ctx.moveTo(w - lw, y); ctx.lineTo(w, y); ctx.stroke();
        var ty = y + (v > 0 ? 10 : v < 0 ? -2 : 4), label = (v >= 0 ? " " : "") + v.toFixed(2) + inUnit(v, ch);
        ctx.fillStyle = "rgba(255,255,255,0.85)"; ctx.fillRect(w - lw, ty - 9, ctx.measureText(label).width + 2, 11); // readable over the line
        ctx.fillStyle = "#555"; ctx.fillText(label, w - lw, ty);
      });
    }, function (n, fy) { var ch = Math.min(C - 1, Math.floor(fy * C)); return "x = " + val(wave, ch * T + n) + (!thin ? inUnit(wave.lo[ch * T + n], ch) : "") + (mask ? (mask[ch * T + n] ? (thin ? "  (some in the mask)" : "  (in the mask)") : "") : ""); }, null, "wave");
    var S = r.ns;
    plot(box, r, "member maps (" + S + " of " + r.draws + " draws x time" + (thin ? "; a cell: the largest |R| of its samples" : "") + ")", Math.max(40, Math.min(8 * S, 160)) * C, function (ctx, w, hh) {
      var img = ctx.createImageData(w, hh), rows = S * C;
      for (var py = 0; py < hh; py++) {
        var row = Math.floor(py / hh * rows), ch = Math.floor(row / S), s = row % S;
        for (var px = 0; px < w; px++) {
          var n = Math.floor(view[0] + (view[1] - view[0]) * px / w);
          var col = colour(mem[s * C * T + ch * T + n]), k = 4 * (py * w + px);
          img.data[k] = col[0]; img.data[k + 1] = col[1]; img.data[k + 2] = col[2]; img.data[k + 3] = 255;
        }
      }
      ctx.putImageData(img, 0, 0);
    }, function (n, fy) {
      var row = Math.min(S * C - 1, Math.floor(fy * S * C)), ch = Math.floor(row / S), s = row % S;
      return "draw " + s + (C > 1 ? ", channel " + ch : "") + ": R = " + exact(mem[s * C * T + ch * T + n]) + (thin ? " (the largest |R| of these samples)" : "");
    }, "[" + fmt(r.lo) + ", " + fmt(r.hi) + "]", "heat");
    var em = extent(q05, C, T, q95);
    plot(box, r, "mean map with the 5%-95% ribbon of the draws", 90 * C, function (ctx, w, hh) {
      lines(ctx, w, hh, r.cn, C, T, [{ band: [q05, q95], colour: "rgba(0,114,178,0.25)" }, { y: mean, colour: "#0072B2" }], em[0], em[1], mask);
    }, function (n, fy) { var i = Math.min(C - 1, Math.floor(fy * C)) * T + n; return "mean " + val(mean, i) + "\nq05 " + val(q05, i) + "\nq95 " + val(q95, i); }, rangeOf(mean));
    var evr = extent(vr, C, T), ecv = extent(cv, C, T);
    plot(box, r, "variance of the draws' maps", 60 * C, function (ctx, w, hh) { lines(ctx, w, hh, r.cn, C, T, [{ y: vr, colour: "#009E73" }], evr[0], evr[1], null); },
      function (n, fy) { return "variance " + val(vr, Math.min(C - 1, Math.floor(fy * C)) * T + n); }, rangeOf(vr));
    plot(box, r, "CV of the draws' maps (kappa 1e-8)", 60 * C, function (ctx, w, hh) { lines(ctx, w, hh, r.cn, C, T, [{ y: cv, colour: "#CC79A7" }], ecv[0], ecv[1], null); },
      function (n, fy) { return "CV " + val(cv, Math.min(C - 1, Math.floor(fy * C)) * T + n); }, rangeOf(cv));
  }
  var list = document.getElementById("reclist"), panel = document.getElementById("panel");
  function show(i, keepView) {
    if (!groups.length) return;
    i = Math.max(0, Math.min(groups.length - 1, i));
    if (!keepView || i !== cur) view = [0, groups[i].items[0].B];
    cur = i;
    var g = groups[i];
    panel.innerHTML = "";
    var h = document.createElement("h3");
    h.textContent = g.label ? "Record " + g.key + " (" + g.label + ")" : "Window " + g.items[0].r + " of recording " + g.items[0].sp; // unlabelled: a recording's window
    panel.appendChild(h);
    g.items.forEach(function (r) { pairPanel(panel, r); });
    panel.setAttribute("data-record", g.key);
    Array.prototype.forEach.call(list.children, function (li, k) { li.className = k === i ? "cur" : ""; });
    if (location.hash !== "#record=" + i) history.replaceState(null, "", "#record=" + i);
  }
  if (list) {
    groups.forEach(function (g, i) {
      var li = document.createElement("li"); li.textContent = g.key + (g.label ? " " + g.label : " " + g.items[0].pred);
      li.addEventListener("click", function () { show(i); }); list.appendChild(li);
    });
    document.getElementById("prev").addEventListener("click", function () { show(cur - 1); });
    document.getElementById("next").addEventListener("click", function () { show(cur + 1); });
    document.addEventListener("keydown", function (e) { if (e.key === "ArrowRight") show(cur + 1); if (e.key === "ArrowLeft") show(cur - 1); });
    var toPanel = function () {
      panel.scrollIntoView();
      if (list.children[cur]) list.children[cur].scrollIntoView({ block: "nearest" });
    };
    var fromHash = function () {
      var m = /record=(\d+)/.exec(location.hash);
      if (!m) return false;
      show(+m[1]);
      return true;
    };
    if (!fromHash()) show(0);
    else if (document.readyState === "complete") toPanel();
    else window.addEventListener("load", toPanel); // once the page below has its height
    window.addEventListener("hashchange", function () { if (fromHash()) toPanel(); });
  }
  // The timeline of a recording's windows.
  var tl = document.getElementById("tl");
  if (tl && D.windows.length) {
    var posts = [], sel = document.getElementById("tl-post");
    D.windows.forEach(function (w) { if (posts.indexOf(w.posterior) < 0) posts.push(w.posterior); });
    posts.forEach(function (p) { var o = document.createElement("option"); o.textContent = p; sel.appendChild(o); });
    var classes = [];
    D.windows.forEach(function (w) { if (classes.indexOf(w.class) < 0) classes.push(w.class); });
    var leg = document.getElementById("tl-legend");
    // a class's colour is the run's (D.classColours, the PNG figures' too); a class outside the list takes the palette's
    function classColour(c) { return (D.classColours && D.classColours[c]) || D.palette[classes.indexOf(c) % D.palette.length]; }
    classes.forEach(function (c) { var s = document.createElement("span"); s.innerHTML = "<i></i>"; s.firstChild.style.background = classColour(c); s.appendChild(document.createTextNode(c)); leg.appendChild(s); });
    tl.width = Math.max(400, Math.min(1100, tl.parentNode.clientWidth || 900));
    // the page's records of the recording's windows (a record's index is its window's), for the waveform strip
    var waveOf = { any: false, max: 0 };
    D.records.forEach(function (r) {
      if (r.label || waveOf[r.r]) return;
      var wave = series(r.wave, r);
      for (var i = 0; i < wave.lo.length; i++) waveOf.max = Math.max(waveOf.max, Math.abs(wave.lo[i]), Math.abs(wave.hi[i]));
      waveOf[r.r] = r; waveOf.any = true;
    });
    if (waveOf.any) { tl.height = 250; waveOf.max = waveOf.max || 1; }
    var ws = [], t0 = 0, t1 = 1;
    function drawTL() {
      ws = D.windows.filter(function (w) { return w.posterior === sel.value; });
      t0 = Math.min.apply(null, ws.map(function (w) { return w.start_s; }));
      t1 = Math.max.apply(null, ws.map(function (w) { return w.start_s + w.length_s; }));
      var g = tl.getContext("2d"), W = tl.width, H = tl.height, top = 12, wh = waveOf.any ? 64 : 0, bh = H - 42 - (wh ? wh + 10 : 0);
      var mimax = Math.max.apply(null, ws.map(function (w) { return w.mutual_information; })) || 1;
      g.clearRect(0, 0, W, H);
      function X(t) { return (t - t0) / ((t1 - t0) || 1) * W; }
      ws.forEach(function (w) {
        var x = X(w.start_s), xw = Math.max(1, X(w.start_s + w.length_s) - x - 1);
        g.fillStyle = classColour(w.class);
        g.globalAlpha = 0.25; g.fillRect(x, top, xw, bh); g.globalAlpha = 1;
        g.fillRect(x, top + bh * (1 - w.probability), xw, bh * w.probability);
        g.fillStyle = "#000"; g.fillRect(x, top + bh * (1 - w.agreement) - 1, xw, 2);
        g.fillStyle = "#D00"; g.fillRect(x, top + bh * (1 - w.mutual_information / mimax) - 1, xw, 2);
        if (w.ood > 0) { // outside what the model was trained on: a black band above the bar
          g.fillStyle = "#000"; g.fillRect(x, top - 8, xw, 6);
        }
      });
      // the recording's waveform under its windows (those the page holds), every channel on one p.u. axis
      var wy = top + bh + 8, axisY = wh ? wy + wh : top + bh;
      if (wh) {
        g.strokeStyle = "#eee"; g.beginPath(); g.moveTo(0, wy + wh / 2); g.lineTo(W, wy + wh / 2); g.stroke();
        ws.forEach(function (w) {
          var r = w.n === 1 ? waveOf[w.window] : null; if (!r) return;
          var wave = series(r.wave, r), x0 = X(w.start_s), x1 = X(w.start_s + w.length_s);
          function Y(v) { return wy + wh / 2 - (wh / 2 - 2) * v / waveOf.max; }
          for (var ch = 0; ch < r.C; ch++) {
            var col = ["#222", "#0072B2", "#D55E00", "#009E73"][ch % 4];
            if (wave.lo === wave.hi) { // each sample's own value: a line
              g.strokeStyle = col; g.beginPath();
              for (var n = 0; n < r.B; n++) g.lineTo(x0 + (x1 - x0) * (n + 0.5) / r.B, Y(wave.lo[ch * r.B + n]));
              g.stroke();
              continue;
            }
            g.fillStyle = col; // thinned columns: the band from their minimum to their maximum
            for (var n = 0; n < r.B; n++) {
              var ya = Y(wave.hi[ch * r.B + n]), yb = Y(wave.lo[ch * r.B + n]);
              g.fillRect(x0 + (x1 - x0) * n / r.B, ya, Math.max(1, (x1 - x0) / r.B), Math.max(1, yb - ya));
            }
          }
        });
        g.fillStyle = "#555"; g.fillText("±" + waveOf.max.toFixed(2) + (D.unit ? " " + D.unit : ""), 2, wy + 10);
      }
      // time in ms from the trigger (from the first sample without one), a tick a cycle where they fit
      var org = D.trigger === null || D.trigger === undefined ? 0 : D.trigger, cyc = D.f0 > 0 ? 1 / D.f0 : 0;
      g.strokeStyle = "#999";
      if (cyc > 0 && (t1 - t0) / cyc <= W / 4) {
        for (var tc = org + Math.ceil((t0 - org) / cyc) * cyc; tc <= t1; tc += cyc) { g.beginPath(); g.moveTo(X(tc), axisY); g.lineTo(X(tc), axisY + 4); g.stroke(); }
      }
      g.fillStyle = "#333";
      for (var k = 0; k <= 5; k++) { var t = t0 + (t1 - t0) * k / 5; g.fillText(((t - org) * 1000).toFixed(1) + " ms", Math.min(W - 50, X(t)), H - 12); }
      if (D.trigger !== null && D.trigger !== undefined && D.trigger >= t0 && D.trigger <= t1) {
        g.strokeStyle = "#7B3294"; g.lineWidth = 2; g.setLineDash([4, 3]); g.beginPath(); g.moveTo(X(D.trigger), 0); g.lineTo(X(D.trigger), axisY); g.stroke(); g.setLineDash([]); g.lineWidth = 1;
        var lx = Math.min(W - 44, X(D.trigger) + 3);
        g.fillStyle = "#fff"; g.fillRect(lx - 1, top + 3, 40, 12); g.fillStyle = "#7B3294"; g.fillText("trigger", lx, top + 12);
      }
    }
    function windowAt(x) {
      var t = t0 + (t1 - t0) * x / tl.width;
      for (var i = 0; i < ws.length; i++) if (t >= ws[i].start_s && t < ws[i].start_s + ws[i].length_s) return ws[i];
      return null;
    }
    sel.addEventListener("change", drawTL);
    tl.addEventListener("mousemove", function (e) {
      var w = windowAt(e.offsetX); if (!w) { tip.style.display = "none"; return; }
      tip.style.display = "block"; tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px";
      tip.textContent = w.n > 1 ?
        "windows " + w.window + ".." + w.last + " (" + w.n + ") from " + w.start_s.toFixed(3) + " s\n" + w.class + " in " + Math.round(w.share * w.n) + " of them" +
        "\nlowest p = " + w.probability.toFixed(4) + "\nhighest mutual information " + fmt(w.mutual_information) + "\nlowest agreement " + w.agreement.toFixed(3) :
 "window " + w.window + " at " + w.start_s.toFixed(3) + " s\n" + w.class + "  p = " + w.probability.toFixed(4) +
        "\nmutual information " + fmt(w.mutual_information) + "\nagreement " + w.agreement.toFixed(3);
      if (w.ood > 0) tip.textContent += "\n" + (w.n > 1 ? w.ood + " of them " : "") + w.ood_reason;
    });
    tl.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    tl.addEventListener("click", function (e) {
      var w = windowAt(e.offsetX); if (!w) return;
      for (var i = 0; i < groups.length; i++) if (groups[i].record >= w.window && groups[i].record <= w.last) { show(i); panel.scrollIntoView(); return; }
    });
    drawTL();
  }
})();
