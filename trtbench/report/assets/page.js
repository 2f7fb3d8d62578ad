// trtbench's offline report pages: the speedup table from its embedded JSON, sorted by a header's click (or
// Enter on it) and filtered by words; tooltips for [data-tip] elements; a filter over whatever [data-filter] names.
"use strict";

function sortKey(text) {
  const number = parseFloat(text);
  return Number.isNaN(number) ? text.toLowerCase() : number;
}

function compareKeys(a, b) {
  if (typeof a === typeof b) return a < b ? -1 : a > b ? 1 : 0;
  return typeof a === "number" ? -1 : 1;
}

function renderTable(table, data) {
  const head = table.createTHead().insertRow();
  data.columns.forEach((name, column) => {
    const th = document.createElement("th");
    th.textContent = name;
    th.tabIndex = 0;
    th.addEventListener("click", () => sortBy(table, column, th));
    th.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        sortBy(table, column, th);
      }
    });
    head.appendChild(th);
  });
  const body = table.createTBody();
  data.rows.forEach((row, index) => {
    const tr = body.insertRow();
    tr.className = row.status;
    tr.dataset.index = String(index);
    row.cells.forEach((text, column) => {
      const td = tr.insertCell();
      td.textContent = text;
      td.dataset.column = data.columns[column];
    });
  });
}

function sortBy(table, column, th) {
  const descending = th.getAttribute("aria-sort") === "ascending";
  table.querySelectorAll("th").forEach((other) => other.removeAttribute("aria-sort"));
  th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  const text = (tr) => tr.cells[column].textContent;
  rows.sort((a, b) => {
    // empty cells last either way; ties keep the ranked order
    const empty = (text(a) === "") - (text(b) === "");
    if (empty) return empty;
    const order = compareKeys(sortKey(text(a)), sortKey(text(b)));
    return (descending ? -order : order) || Number(a.dataset.index) - Number(b.dataset.index);
  });
  rows.forEach((tr) => body.appendChild(tr));
}

function filterBy(input) {
  const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
  const items = Array.from(document.querySelectorAll(input.dataset.filter));
  let shown = 0;
  items.forEach((item) => {
    const text = (item.dataset.search || item.textContent).toLowerCase();
    const keep = words.every((word) => text.includes(word));
    item.hidden = !keep;
    shown += keep;
  });
  const count = document.getElementById(input.dataset.count);
  if (count) count.textContent = `${shown} of ${items.length} shown`;
}

function showTip(event) {
  const tip = document.getElementById("tip");
  tip.textContent = event.currentTarget.dataset.tip;
  tip.style.display = "block";
  const box = event.currentTarget.getBoundingClientRect();
  tip.style.left = `${Math.min(box.right + 8, window.innerWidth - tip.offsetWidth - 8)}px`;
  tip.style.top = `${Math.max(box.top - tip.offsetHeight - 8, 8)}px`;
}

function hideTip() {
  document.getElementById("tip").style.display = "none";
}

document.addEventListener("DOMContentLoaded", () => {
  const data = document.getElementById("table-data");
  const table = document.getElementById("speedup-table");
  if (data && table) renderTable(table, JSON.parse(data.textContent));
  document.querySelectorAll("input[data-filter]").forEach((input) => {
    input.addEventListener("input", () => filterBy(input));
    filterBy(input);
  });
  document.querySelectorAll("[data-tip]").forEach((element) => {
    element.addEventListener("mouseenter", showTip);
    element.addEventListener("focus", showTip);
    element.addEventListener("mouseleave", hideTip);
    element.addEventListener("blur", hideTip);
  });
});
