// How the phone page writes money, dates, times, ABNs and masked numbers: the same rules as the
// desk app's app/presentation.py, so a landlord's phone and the front desk read a payslip alike.
// tests/browser/test_phone_formats.py runs one table of cases through both.

const MINOR_UNITS = { JPY: 0, KRW: 0, VND: 0, XOF: 0, XAF: 0, CLP: 0, ISK: 0, BHD: 3, KWD: 3,
  OMR: 3, JOD: 3, TND: 3, IQD: 3, LYD: 3 };
const SYMBOLS = { AUD: "$", NZD: "$", USD: "$", CAD: "$", SGD: "$", HKD: "$", GBP: "£",
  EUR: "€", JPY: "¥" };
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

function group(digits) {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** A decimal string (v2, shown exactly) or integer minor units (v1) as "$1,234.50 AUD". */
export function money(value, currency, cents) {
  let text = String(value).trim();
  if (!/^-?\d+(\.\d+)?$/.test(text)) return `${text} ${currency}`;
  const negative = text.startsWith("-");
  if (negative) text = text.slice(1);
  let whole = text;
  let fraction = "";
  if (cents) {
    const places = MINOR_UNITS[currency] ?? 2;
    const padded = text.padStart(places + 1, "0");
    whole = places ? padded.slice(0, -places) : padded;
    fraction = places ? padded.slice(-places) : "";
  } else {
    [whole, fraction = ""] = text.split(".");
  }
  whole = whole.replace(/^0+(?=\d)/, "");
  const number = group(whole) + (fraction ? `.${fraction}` : "");
  return `${negative ? "-" : ""}${SYMBOLS[currency] || ""}${number} ${currency}`;
}

export function amountOf(fields, key) {
  const currency = String(fields.currency || "");
  if (fields[`${key}_cents`] !== undefined) return money(fields[`${key}_cents`], currency, true);
  if (fields[key] !== undefined) return money(fields[key], currency, false);
  return null;
}

export function longDate(value) {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(String(value || ""));
  if (!match) return String(value || "");
  return `${Number(match[3])} ${MONTHS[Number(match[2]) - 1]} ${match[1]}`;
}

const two = (n) => String(n).padStart(2, "0");

/** A service time (UTC, ISO 8601; without a zone it is UTC too) in this phone's time zone, to the
 * minute ("13 Nov 2026 20:00"); any other text as it is. */
export function timestamp(value) {
  const text = String(value || "");
  const match = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(:\d{2}(\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})?$/i.exec(text);
  if (!match) return text;
  const zone = match[5] ? match[5].replace(/^z$/i, "Z") : "Z";
  const moment = new Date(`${match[1]}T${match[2]}${zone}`);
  if (Number.isNaN(moment.getTime())) return text;
  return `${moment.getDate()} ${MONTHS[moment.getMonth()]} ${moment.getFullYear()} `
    + `${two(moment.getHours())}:${two(moment.getMinutes())}`;
}

/** An 11-digit Australian Business Number grouped as printed ("51 824 753 556"), else null. */
export function formatAbn(value) {
  const text = String(value || "");
  const digits = text.replace(/\D/g, "");
  if (digits.length !== 11 || !/^[0-9 ]*$/.test(text.trim())) return null;
  return `${digits.slice(0, 2)} ${digits.slice(2, 5)} ${digits.slice(5, 8)} ${digits.slice(8)}`;
}

/** All but the last 3 letters or digits hidden, as on the desk. */
export function maskAccount(value) {
  const total = [...value].filter((c) => /[A-Za-z0-9]/.test(c)).length;
  if (total <= 3) return value;
  let seen = 0;
  return [...value].map((c) => {
    if (!/[A-Za-z0-9]/.test(c)) return c;
    seen += 1;
    return seen > total - 3 ? c : "•";
  }).join("");
}

const EMPLOYEE_LABELS = {
  position: "Position", department: "Department", employer_abn: "Employer ABN",
  employer_identity: "Employer", employer_name: "Employer", ird_number: "IRD number",
  bsb: "BSB", account_number: "Bank account", account_name: "Account name", address: "Address",
  raw: "Employee data",
};
const MASKED = new Set(["account_number", "ird_number"]);

/** [label, shown value] of the employee's fields after the name, as the desk lists them: bank
 * account and IRD number masked, an employer that is an ABN grouped as one. */
export function employeeRows(employee) {
  const rows = [];
  for (const [key, label] of Object.entries(EMPLOYEE_LABELS)) {
    if (key === "raw" && employee.employee_name === undefined) continue;
    const value = employee[key];
    if (!value) continue;
    const abn = (key === "employer_identity" || key === "employer_abn") ? formatAbn(value) : null;
    if (abn) rows.push(["Employer ABN", abn]);
    else rows.push([label, MASKED.has(key) ? maskAccount(value) : value]);
  }
  return rows;
}
