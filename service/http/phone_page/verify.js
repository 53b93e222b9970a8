// The phone page of Payslip Verify: verify the badge whose link opened this page.
//
// Privacy rules this script keeps (README "Verifying with a phone"):
// - The code is read from this page's own address. Its ciphertext is in the fragment, which the
//   browser never sends; it leaves the phone only in the body of POST /v1/verifications/payload.
//   The fragment is dropped from the address bar (and so from history) as soon as it is read.
// - Nothing about the record is asked before sign-in: a signed-out visitor sees what this is.
// - The access token lives in sessionStorage (this tab only). The client secret is kept only
//   when "Remember on this device" is ticked (localStorage), otherwise it is forgotten at once.
// - A result is cleared after 60 s without a tap, and on "Done".
// Everything is written with textContent: nothing from the service is parsed as HTML.

import { amountOf, employeeRows, longDate, timestamp } from "./format.js";

const IDLE_MS = 60_000;
const DEADLINE_MS = 4_000; // one user action (sign-in + verification) answers within this
const TOKEN_KEY = "payslipVerify.token";
const CREDENTIAL_KEY = "payslipVerify.credential";
const SCOPE = "service:verifier";

const body = document.body;
const instance = body.dataset.instance || location.host;
const audience = body.dataset.audience || location.origin;
const $ = (id) => document.getElementById(id);

// --- what opened this page ----------------------------------------------------------------------

/** {kind: "pair", code} | {kind: "scan", barcode} | {kind: "incomplete"} | {kind: "none"} from
 * the page's address. A badge link whose code part (`#2.…`) was lost, as some messengers and
 * hand-typing do, is "incomplete": nothing is known about the payslip, so it gets no verdict and
 * is never sent (the desk app says the same text is not a payslip code). */
function readAddress() {
  const path = location.pathname.replace(/\/+$/, "");
  const fragment = location.hash.slice(1);
  if (path === "/v/pair") return fragment ? { kind: "pair", code: fragment } : { kind: "none" };
  if (path === "/v" && !fragment) return { kind: "none" };
  if (/^\/v\/[A-Za-z0-9_-]{22}$/.test(path) && /^([12]\.?)?$/.test(fragment)) {
    return { kind: "incomplete" };
  }
  // Every scan URL form of PROTOCOL §3 is sent whole; the service parses it (any host).
  return { kind: "scan", barcode: location.href };
}

function forgetAddress() {
  // Only /v stays (the older form `/v/<payload>` even has the code in the path). A reload then
  // shows "ready" instead of re-checking a link whose code is gone.
  history.replaceState(null, "", state.address.kind === "pair" ? "/v/pair" : "/v");
}

// --- credentials --------------------------------------------------------------------------------

function savedToken() {
  try {
    const token = JSON.parse(sessionStorage.getItem(TOKEN_KEY) || "null");
    if (token && token.expiresAt - 30_000 > Date.now()) return token;
  } catch (_) { /* unreadable: treat as signed out */ }
  sessionStorage.removeItem(TOKEN_KEY);
  return null;
}

function rememberedCredential() {
  try {
    const saved = JSON.parse(localStorage.getItem(CREDENTIAL_KEY) || "null");
    if (saved && saved.clientId && saved.clientSecret) return saved;
  } catch (_) { /* ignore */ }
  return null;
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  localStorage.removeItem(CREDENTIAL_KEY);
}

async function post(path, payload, token) {
  const controller = new AbortController();
  const left = (state.deadline || Date.now() + DEADLINE_MS) - Date.now();
  const timer = setTimeout(() => controller.abort(), Math.max(250, left));
  const headers = { "Content-Type": "application/json", Accept: "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  try {
    const reply = await fetch(path, {
      method: "POST",
      headers,
      body: JSON.stringify(payload),
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
      signal: controller.signal,
    });
    let data = null;
    try { data = await reply.json(); } catch (_) { data = null; }
    return { status: reply.status, data: data || {} };
  } catch (_) {
    return { status: 0, data: {} };
  } finally {
    clearTimeout(timer);
  }
}

/** Exchange a client id and secret for a token; {token} or {error: "refused"|"forbidden"|"offline"}. */
async function signIn(clientId, clientSecret, label) {
  const reply = await post("/oauth/token", {
    grant_type: "client_credentials",
    client_id: clientId,
    client_secret: clientSecret,
    audience,
    scope: SCOPE,
  });
  if (reply.status === 200 && reply.data.access_token) {
    const token = {
      value: reply.data.access_token,
      expiresAt: Date.now() + 1000 * (reply.data.expires_in || 900),
      label: label || clientId,
    };
    sessionStorage.setItem(TOKEN_KEY, JSON.stringify(token));
    return { token };
  }
  if (reply.status === 401) return { error: "refused" };
  if (reply.status === 403) return { error: "forbidden" };
  if (reply.status === 400) return { error: "malformed" };
  if (reply.status === 429) return { error: "busy" };
  return { error: "offline" };
}

/** A usable token: the tab's own, or a fresh one from the remembered credential. */
async function currentToken() {
  const token = savedToken();
  if (token) return { token };
  const saved = rememberedCredential();
  if (!saved) return { error: "signed-out" };
  const result = await signIn(saved.clientId, saved.clientSecret, saved.label);
  if (result.error === "refused" || result.error === "forbidden") {
    localStorage.removeItem(CREDENTIAL_KEY);
    return { error: "disabled" };
  }
  return result;
}

// --- what a result means (the same words as the desk app) ---------------------------------------

const REASONS = {
  DECRYPTION_FAILED: "This code has been altered or was not issued by a registered payroll provider.",
  SERVICE_REFERENCE_NOT_FOUND: "No payslip is registered under this code. It may be forged, or from another service.",
  VALIDATION_FAILED: "This is not a payslip verification code, or it was damaged.",
  KEY_VERSION_UNAVAILABLE: "The payroll provider has withdrawn the key for this payslip, so it can no longer be checked. Ask the employee for a newer payslip.",
  PAYLOAD_TOO_LARGE: "This code is too large to be a payslip code.",
};

// --- screens ------------------------------------------------------------------------------------

const state = { address: readAddress(), idleTimer: 0, busy: false, deadline: 0 };

/** Start the clock of one user action: every request it makes shares DEADLINE_MS. */
function startAction() {
  state.deadline = Date.now() + DEADLINE_MS;
}

function show(...ids) {
  for (const id of ["intro", "incomplete", "pairing", "sign-in", "ready", "checking"]) {
    $(id).hidden = !ids.includes(id);
  }
  const verdict = ids.includes("verdict");
  $("verdict").hidden = !verdict;
  $("main").hidden = verdict;
  $("bar").hidden = verdict;
  $("foot").hidden = verdict;
  body.classList.toggle("showing-verdict", verdict);
  window.scrollTo(0, 0);
}

function message(id, text) {
  const element = $(id);
  element.textContent = text || "";
  element.hidden = !text;
}

function showWho() {
  const token = savedToken();
  $("who").hidden = !token;
  $("who-name").textContent = token ? token.label : "";
  $("who-name").title = token ? `Signed in as ${token.label}` : "";
  $("ready-eyebrow").textContent = token ? `Signed in as ${token.label}` : "Signed in";
}

function showSignIn(reason) {
  showWho();
  const hasCode = state.address.kind === "scan";
  // With a code: lead with "Not checked yet", so nothing before sign-in can read like a pass.
  $("intro-title").textContent = hasCode ? "Not checked yet" : `Verify payslips for ${instance}`;
  $("intro-lead").textContent = hasCode
    ? `This is a payslip verification code for ${instance}. Nothing about the payslip has been checked.`
    : `Sign in to check the QR codes on payslips registered with ${instance}.`;
  $("sign-in-button").textContent = hasCode ? "Sign in and verify" : "Sign in";
  message("sign-in-message", reason);
  show("intro", "sign-in");
  if (reason) $("sign-in").scrollIntoView({ block: "start" });
}

function showReady(title, text) {
  showWho();
  $("ready-title").textContent = title || "Ready to verify";
  $("ready-text").textContent = text
    || "Point your phone's camera at the QR code on a payslip, then open the link it offers.";
  show("ready");
}

function fact(list, label, value, className) {
  if (value === undefined || value === null || value === "") return;
  const term = document.createElement("dt");
  term.textContent = label;
  const detail = document.createElement("dd");
  detail.textContent = value;
  if (className) {
    term.className = className;
    detail.className = className;
  }
  list.append(term, detail);
}

function clearVerdict() {
  for (const id of ["verdict-facts", "details-list"]) $(id).replaceChildren();
  for (const id of ["verdict-title", "verdict-instruction", "verdict-reason", "verdict-mark"]) {
    $(id).textContent = "";
  }
  $("details").hidden = true;
  $("more").hidden = true;
  $("verdict").className = "verdict";
}

function showVerdict(kind, reason, result) {
  clearVerdict();
  const words = {
    verified: ["VERIFIED", "Accept this payslip.", "✓"],
    "not-verified": ["NOT VERIFIED", "Do not accept this payslip.", "✕"],
    "cannot-verify": ["CANNOT VERIFY", "Try again in a moment.", "!"],
  }[kind];
  $("verdict").className = `verdict ${kind}`;
  $("verdict-mark").textContent = words[2];
  $("verdict-title").textContent = words[0];
  $("verdict-instruction").textContent = words[1];
  $("verdict-reason").textContent = reason;
  $("retry").hidden = kind !== "cannot-verify";
  resetSaveRecord(kind !== "cannot-verify");
  if (kind === "verified" && result) fillVerified(result);
  show("verdict");
  startIdleTimer();
  $(kind === "cannot-verify" ? "retry" : "done").focus({ preventScroll: true });
}

function fillVerified(result) {
  const payslip = result.payslip || {};
  const fields = payslip.payslip_non_pii || {};
  const employee = result.employee || {};
  const facts = $("verdict-facts");
  fact(facts, "Employee", employee.employee_name || employee.raw, "name");
  fact(facts, "Net pay", amountOf(fields, "net"), "big");
  fact(facts, "Payment date", longDate(fields.payment_date));
  fact(facts, "Issued by", (payslip.issuer || {}).name);

  const list = $("details-list");
  const start = fields.period_start;
  const end = fields.period_end;
  fact(list, "Pay period", start ? `${longDate(start)} – ${longDate(end)}` : longDate(end));
  fact(list, "Gross pay", amountOf(fields, "gross"));
  fact(list, "Tax (PAYG)", amountOf(fields, "paygw"));
  fact(list, "Tax (PAYE)", amountOf(fields, "paye"));
  fact(list, "YTD gross", amountOf(fields, "ytd_gross"));
  fact(list, "YTD tax", amountOf(fields, "ytd_paygw") || amountOf(fields, "ytd_paye"));
  for (const [label, value] of employeeRows(employee)) fact(list, label, value);
  fact(list, "Reference", result.service_reference, "mono");
  fact(list, "Registered", timestamp(payslip.registered_at));
  fact(list, "Checked", timestamp(result.decrypted_at));
  $("details").hidden = list.childElementCount === 0;
  $("more").hidden = $("details").hidden;
}

// --- the idle clear -----------------------------------------------------------------------------

function startIdleTimer() {
  clearTimeout(state.idleTimer);
  state.idleTimer = setTimeout(() => finish("Cleared after 60 seconds without a tap, so the next person cannot see it."), IDLE_MS);
}

function finish(note) {
  clearTimeout(state.idleTimer);
  clearVerdict();
  state.address = { kind: "none" };
  history.replaceState(null, "", "/v");
  if (savedToken() || rememberedCredential()) {
    showReady(note ? "Cleared" : "Ready for the next payslip", note || undefined);
  } else {
    showSignIn("");
  }
}

for (const event of ["pointerdown", "keydown", "scroll", "touchstart"]) {
  window.addEventListener(event, () => { if (!$("verdict").hidden) startIdleTimer(); }, { passive: true });
}

// --- verifying ----------------------------------------------------------------------------------

async function verify(retried = false) {
  if (state.address.kind !== "scan" || state.busy) return;
  state.busy = true;
  try {
    const auth = await currentToken();
    if (auth.error === "signed-out") return showSignIn("");
    if (auth.error === "disabled") {
      return showSignIn("This phone's sign-in has ended (a paired phone stays signed in for a limited time) or was switched off by your administrator. Ask for a new pairing code, or sign in again.");
    }
    if (auth.error) return showVerdict("cannot-verify", SIGN_IN_PROBLEMS[auth.error] || SIGN_IN_PROBLEMS.offline);
    show("checking");
    const reply = await post("/v1/verifications/payload", { barcode: state.address.barcode }, auth.token.value);
    const code = reply.data.code;
    if (reply.status === 200 && typeof reply.data.verified === "boolean") {
      if (reply.data.verified) return showVerdict("verified", "This payslip matches its registered record.", reply.data);
      return showVerdict("not-verified", "The payroll provider has revoked this payslip.");
    }
    if (reply.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      if (rememberedCredential() && !retried) {
        state.busy = false;
        return verify(true);
      }
      return showSignIn("Your sign-in has ended or was switched off. Sign in again to verify this payslip.");
    }
    if (reply.status === 403) {
      signOut();
      return showSignIn("These credentials are not allowed to verify payslips. Use a verifier's client ID and secret.");
    }
    if (REASONS[code] && reply.status >= 400 && reply.status < 500 && reply.status !== 429) {
      return showVerdict("not-verified", REASONS[code]);
    }
    if (reply.status === 429 || reply.status === 503) {
      return showVerdict("cannot-verify", "The verification service is busy. Wait a moment, then try again.");
    }
    if (reply.status === 0) {
      return showVerdict("cannot-verify", "The verification service cannot be reached. Check the phone's connection.");
    }
    return showVerdict("cannot-verify", "The verification service had a problem answering. Try again, or use the desk app.");
  } finally {
    state.busy = false;
  }
}

// --- a verification record to keep (PROTOCOL §11) ----------------------------------------------

function resetSaveRecord(offered) {
  $("save-record").hidden = !offered;
  $("save-record").disabled = false;
  $("save-record").textContent = "Save record";
}

/** Ask the service for a signed receipt of this code and download it (the service keeps none). */
async function saveRecord() {
  const barcode = state.address.barcode;
  if (!barcode || state.busy) return;
  state.busy = true;
  startAction();
  $("save-record").disabled = true;
  try {
    const auth = await currentToken();
    const reply = auth.token
      ? await post("/v1/verifications/receipt", { barcode }, auth.token.value)
      : { status: 0, data: {} };
    if (reply.status !== 200 || typeof reply.data.receipt !== "string") {
      $("save-record").textContent = "Not saved: try again";
      $("save-record").disabled = false;
      return;
    }
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([`${reply.data.receipt}\n`], { type: "application/jose" }));
    link.download = `verification-record-${new Date().toISOString().slice(0, 10)}.jws`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
    $("save-record").textContent = "Record saved";
  } finally {
    state.busy = false;
  }
}

$("save-record").addEventListener("click", saveRecord);

// --- sign-in and pairing ------------------------------------------------------------------------

const SIGN_IN_PROBLEMS = {
  refused: "That client ID and secret were not accepted. Check them, or ask your administrator.",
  forbidden: "These credentials are not a verifier's. Use a verifier's client ID and secret.",
  malformed: "Enter both the client ID and the secret.",
  offline: "The verification service cannot be reached. Check the phone's connection and try again.",
  busy: "Too many sign-ins from this network just now. Wait a minute, then try again.",
};

$("sign-in").addEventListener("submit", async (event) => {
  event.preventDefault();
  startAction();
  const clientId = $("client-id").value.trim();
  const clientSecret = $("client-secret").value.trim();
  if (!clientId || !clientSecret) return message("sign-in-message", SIGN_IN_PROBLEMS.malformed);
  $("sign-in-button").disabled = true;
  message("sign-in-message", "");
  const result = await signIn(clientId, clientSecret, clientId);
  $("sign-in-button").disabled = false;
  if (result.error === "offline" && state.address.kind === "scan") {
    return showVerdict("cannot-verify", "The verification service cannot be reached. Check the phone's connection.");
  }
  if (result.error) return message("sign-in-message", SIGN_IN_PROBLEMS[result.error]);
  if ($("remember").checked) {
    localStorage.setItem(CREDENTIAL_KEY, JSON.stringify({ clientId, clientSecret, label: clientId }));
  }
  $("client-secret").value = "";
  if (state.address.kind === "scan") return verify();
  return showReady();
});

$("pair-button").addEventListener("click", async () => {
  if (state.address.kind !== "pair") return;
  startAction();
  $("pair-button").disabled = true;
  message("pair-message", "");
  const reply = await post("/v1/pairings/redeem", { pairing_code: state.address.code, device_name: "phone" });
  if (reply.status !== 200) {
    $("pair-button").disabled = false;
    const text = reply.status === 0
      ? SIGN_IN_PROBLEMS.offline
      : "This pairing code has already been used or has expired. Ask your administrator for a new one.";
    return message("pair-message", text);
  }
  const { client_id: clientId, client_secret: clientSecret } = reply.data;
  const name = String(reply.data.name || clientId).split(" · ")[0]; // the front desk's name
  state.address = { kind: "none" };
  const result = await signIn(clientId, clientSecret, name);
  if ($("pair-remember").checked) {
    localStorage.setItem(CREDENTIAL_KEY, JSON.stringify({ clientId, clientSecret, label: name }));
  }
  if (result.error) return showSignIn(SIGN_IN_PROBLEMS[result.error]);
  return showReady("This phone is paired", "Point your phone's camera at the QR code on a payslip, then open the link it offers.");
});

$("sign-out").addEventListener("click", () => {
  signOut();
  finish("");
});
$("done").addEventListener("click", () => finish(""));
$("retry").addEventListener("click", () => {
  startAction();
  verify();
});

// --- start --------------------------------------------------------------------------------------

function start() {
  startAction();
  if (state.address.kind !== "none") forgetAddress();
  if (state.address.kind === "pair") {
    showWho();
    return show("pairing");
  }
  if (state.address.kind === "incomplete") {
    showWho();
    return show("incomplete");
  }
  if (state.address.kind === "scan" && (savedToken() || rememberedCredential())) return verify();
  if (state.address.kind === "none" && (savedToken() || rememberedCredential())) return showReady();
  return showSignIn("");
}

// A link opened in a tab already showing this page changes only the fragment: no reload.
window.addEventListener("hashchange", () => {
  state.address = readAddress();
  start();
});

start();
