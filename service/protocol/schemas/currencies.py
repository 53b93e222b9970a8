"""Currency codes a v2 payslip may use (PROTOCOL §5), embedded so that validation never depends
on the host.

A system's ISO 4217 tables (iso-codes, ICU) vary by distribution and lag the standard, and the
answer must be the same on every instance or a record accepted by one would be refused by another.

The set is ISO 4217 List One as of 2026, keeping only codes with a minor unit (exponent 0 to 4):
- out: fund codes BOV CHE CHW CLF COU MXV USN UYI UYW; codes without a minor unit XAG XAU XBA XBB
  XBC XBD XDR XPD XPT XSU XTS XUA XXX;
- out as withdrawn: HRK (euro, 2023), ZWL (replaced by ZWG, 2024), ANG (replaced by XCG, 2025),
  SLL (replaced by SLE);
- in, being recent: ZWG (2024), XCG (2025).
"""

from __future__ import annotations

ISO_4217_WITH_MINOR_UNIT: frozenset[str] = frozenset(
    """
    AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN
    BZD CAD CDF CHF CLP CNY COP CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP
    GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR
    KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK
    MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR
    SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS
    UAH UGX USD UYU UZS VED VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG
    """.split()  # noqa: SIM905  (a table reads better than 150 quoted items)
)
