"""The workspace a fake Google Drive serves (tests/fakes/gdrive.py): a service account key, Drive's
`Permission` resources, files and shared drives, the folder tree and shared drive `build` makes, and the
edits a test makes between runs (a new version, a rename, the trash, new permissions that leave the
version as it was: the harder case for an incremental sync, a deletion).

The folder tree, four levels deep: Company handbook / Policies / HR / Benefits, and Engineering; Docs,
PDFs, a text and a Markdown file, shared with the `example.com` domain, the `hr-team@` group, one user,
anyone with the link, or only people no mapping names (the board minutes); every file has its owner
and the service account as readers. The shared drive, Support desk (its members: the `support-team@`
group and one user), holds a folder of its own. Sheets, Slides and images sit beside them.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.confluence import minimal_pdf

FOLDER = "application/vnd.google-apps.folder"
DOC = "application/vnd.google-apps.document"
SHEET = "application/vnd.google-apps.spreadsheet"
SLIDES = "application/vnd.google-apps.presentation"
SCOPE = "https://www.googleapis.com/auth/drive.readonly"
DOMAIN = "example.com"
OWNER = "it-admin@example.com"
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
"""The `aud` of every grant assertion google-auth signs, wherever its `token_uri` points."""


def service_account_key(token_uri: str, email: str = "candor-sync@acme-docs.iam.gserviceaccount.com") -> dict[str, str]:
    """A throwaway service account key, in the JSON form Google's console downloads."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return {
        "type": "service_account",
        "project_id": "acme-docs",
        "private_key_id": secrets.token_hex(20),
        "private_key": pem,
        "client_email": email,
        "client_id": "10" + "".join(secrets.choice("0123456789") for _ in range(19)),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        "universe_domain": "googleapis.com",
    }


def permission(kind: str, who: str = "", role: str = "reader", **extra: Any) -> dict[str, Any]:
    """A Drive v3 `Permission` resource."""
    data: dict[str, Any] = {"kind": "drive#permission", "type": kind, "role": role}
    if kind in ("user", "group"):
        data |= {"id": str(abs(hash(who)) % 10**20), "emailAddress": who, "displayName": who.split("@")[0]}
    elif kind == "domain":
        data |= {"id": f"{who}-domain", "domain": who, "allowFileDiscovery": False}
    else:
        data |= {"id": "anyoneWithLink", "allowFileDiscovery": False}
    return data | extra


STAFF = [permission("domain", DOMAIN)]
HR = [permission("group", "hr-team@example.com")]
ANYONE = [permission("anyone")]


@dataclass
class File:
    id: str
    name: str
    mime: str
    parent: str
    content: bytes = b""
    """A Doc's paragraphs (one a line, UTF-8), or a file's bytes."""
    permissions: list[dict[str, Any]] = field(default_factory=list)
    drive_id: str | None = None
    version: int = 3
    trashed: bool = False

    @property
    def modified(self) -> str:
        return (datetime(2026, 1, 5, 9, tzinfo=UTC) + timedelta(days=self.version)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    @property
    def link(self) -> str:
        if self.mime == DOC:
            return f"https://docs.google.com/document/d/{self.id}/edit?usp=drivesdk"
        if self.mime == FOLDER:
            return f"https://drive.google.com/drive/folders/{self.id}"
        return f"https://drive.google.com/file/d/{self.id}/view?usp=drivesdk"


@dataclass
class SharedDrive:
    id: str
    name: str
    members: list[dict[str, Any]]


@dataclass
class Workspace:
    """The files and shared drives of one fake Drive, and the edits a test makes between runs."""

    files: dict[str, File] = field(default_factory=dict)
    drives: dict[str, SharedDrive] = field(default_factory=dict)
    seed: str = field(default_factory=lambda: secrets.token_hex(6))
    """In every id, so each fake's files (and their links) are its own."""
    key: dict[str, str] = field(default_factory=dict)
    """The service account's key: its private half is the client's, its public the fake's."""
    _numbers: Counter[str] = field(default_factory=Counter)

    @property
    def root(self) -> str:
        return self._id("F", 0)

    @property
    def drive(self) -> str:
        return f"0A{self.seed}Uk9PVA"

    def find(self, name: str) -> File:
        return next(f for f in self.files.values() if f.name == name)

    def key_json(self) -> str:
        return json.dumps(self.key)

    def _id(self, kind: str, number: int) -> str:
        return f"1{kind}{self.seed}{number:03d}"

    def _add(
        self, name: str, mime: str, parent: str, content: str | bytes = b"", perms: list[dict[str, Any]] | None = None
    ) -> File:
        kind = "F" if mime == FOLDER else "x"
        self._numbers[kind] += 1
        data = content.encode() if isinstance(content, str) else content
        drive_id = (
            self.drive if parent == self.drive else (self.files[parent].drive_id if parent in self.files else None)
        )
        made = File(self._id(kind, self._numbers[kind]), name, mime, parent, data, list(perms or []), drive_id)
        self.files[made.id] = made
        return made

    def build(self) -> None:
        sa = permission("user", self.key["client_email"])
        owner = permission("user", OWNER, "owner")
        mine = [owner, sa]
        root = File(self.root, "Company handbook", FOLDER, "root", permissions=mine)
        self.files[root.id] = root

        def doc(name: str, parent: str, text: str, perms: list[dict[str, Any]]) -> File:
            return self._add(name, DOC, parent, text, mine + perms)

        def pdf(name: str, parent: str, lines: list[str], perms: list[dict[str, Any]]) -> File:
            return self._add(name, "application/pdf", parent, minimal_pdf(lines), mine + perms)

        doc("Welcome to Acme", root.id, "Welcome to Acme.\nAcme was founded in 2009 in Leeds.", STAFF)
        doc(
            "Office guide",
            root.id,
            "The office guide.\nThe guest wifi network is called acme-lobby and the front desk opens at 8:30.",
            ANYONE,
        )
        self._add("Budget 2026", SHEET, root.id, perms=mine + STAFF)
        self._add("Team photo.jpg", "image/jpeg", root.id, b"\xff\xd8\xff\xe0", mine + STAFF)
        policies = self._add("Policies", FOLDER, root.id, perms=mine)
        doc("Travel policy", policies.id, "Travel.\nEconomy class is required for flights shorter than 6 hours.", STAFF)
        doc(
            "Expense policy", policies.id, "Expenses.\nExpense reports must be filed within 30 days of purchase.", STAFF
        )
        pdf(
            "Security policy.pdf",
            policies.id,
            ["Security policy", "Laptops lock after 5 minutes of inactivity."],
            STAFF,
        )
        doc(
            "Board minutes",
            policies.id,
            "Board minutes.\nThe board approved the acquisition of Northwind Traders for 12 million euros.",
            [permission("user", "ceo@example.com", "writer"), permission("user", "cfo@example.com")],
        )
        self._add(
            "Code of conduct.md",
            "text/markdown",
            policies.id,
            "# Code of conduct\n\nGifts from suppliers worth more than 50 euros must be declared.\n",
            mine + STAFF,
        )
        hr = self._add("HR", FOLDER, policies.id, perms=mine)
        doc("Salary review", hr.id, "Salary review.\nThe 2026 salary review budget is 4.5 percent of payroll.", HR)
        doc(
            "Promotion process",
            hr.id,
            "Promotions.\nPromotion committees meet every April and October.",
            [permission("user", "ana@example.com", "commenter")],
        )
        doc("Leave policy", hr.id, "Leave.\nEmployees receive 27 days of paid annual leave.", STAFF)
        self._add("Headcount", SHEET, hr.id, perms=mine + HR)
        benefits = self._add("Benefits", FOLDER, hr.id, perms=mine)
        pdf("Pension plan.pdf", benefits.id, ["Pension plan", "The employer pension contribution is 7 percent."], HR)
        doc("Dental cover", benefits.id, "Dental.\nDental cover includes two check-ups per year.", STAFF)
        self._add(
            "Gym discount.txt",
            "text/plain",
            benefits.id,
            "Gym discount\n\nStaff get 40 percent off at FitLab gyms.\n",
            mine + STAFF,
        )
        engineering = self._add("Engineering", FOLDER, root.id, perms=mine)
        doc(
            "Deploy checklist",
            engineering.id,
            "Deploy checklist.\nProduction deploys are frozen every Friday after 14:00 UTC.",
            STAFF,
        )
        for n in range(1, 9):
            text = f"Engineering note {n}.\nNote {n} records how the platform team handles topic {n}, part {n}."
            doc(f"Engineering note {n}", engineering.id, text, STAFF)
        self._add("Architecture review", SLIDES, engineering.id, perms=mine + STAFF)

        members = [
            permission("group", "support-team@example.com", "organizer", permissionDetails=[self._member()]),
            permission("user", "desk-lead@example.com", "organizer", permissionDetails=[self._member()]),
        ]
        self.drives[self.drive] = SharedDrive(self.drive, "Support desk", members)
        sd = self.drive
        self._add("Returns policy", DOC, sd, "Returns.\nCustomers may return unworn items within 45 days of delivery.")
        self._add("Shipping times", DOC, sd, "Shipping.\nStandard shipping to Canada takes 6 business days.")
        self._add(
            "Kettle warranty.pdf",
            "application/pdf",
            sd,
            minimal_pdf(["Kettle warranty", "The Aurora kettle warranty lasts 3 years from purchase."]),
        )
        self._add(
            "Refund timing.txt", "text/plain", sd, "Refunds\n\nRefunds reach the original card in 5 working days."
        )
        self._add("Macros.md", "text/markdown", sd, "# Macros\n\nThe apology macro offers a 10 percent voucher.\n")
        self._add("Public FAQ", DOC, sd, "Support hours.\nSupport is open from 8:00 to 20:00 CET on weekdays.", ANYONE)
        self._add("Return rates", SHEET, sd)
        self._add("logo.png", "image/png", sd, b"\x89PNG\r\n")
        escalations = self._add("Escalations", FOLDER, sd)
        self._add(
            "Escalation matrix",
            DOC,
            escalations.id,
            "Escalations.\nPriority 1 tickets reach the duty manager within 15 minutes.",
        )

    def _member(self) -> dict[str, Any]:
        return {"permissionType": "member", "role": "organizer", "inherited": True, "inheritedFrom": self.drive}

    # --- knobs ------------------------------------------------------------------------------------

    def edit(self, name: str, text: str) -> File:
        """A new version of the file called `name`."""
        found = self.find(name)
        found.content = text.encode()
        found.version += 1
        return found

    def rename(self, name: str, new: str) -> File:
        found = self.find(name)
        found.name = new
        found.version += 1
        return found

    def trash(self, name: str) -> File:
        found = self.find(name)
        found.trashed = True
        return found

    def share(self, name: str, permissions: list[dict[str, Any]]) -> File:
        """Replace the file's own permissions (its owner stays); its version stays too."""
        found = self.find(name)
        found.permissions = [p for p in found.permissions if p.get("role") == "owner"] + permissions
        return found

    def vanish(self, file_or_drive_id: str) -> None:
        self.files.pop(file_or_drive_id, None)
        self.drives.pop(file_or_drive_id, None)
