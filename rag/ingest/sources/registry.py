"""The connector for a configured source's kind."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from rag.errors import SyncError
from rag.ingest.sources.base import Connector
from rag.ingest.sources.config import SourceConfig, resolve_credentials
from rag.ingest.sources.confluence import Confluence
from rag.ingest.sources.confluence_options import ConfluenceOptions
from rag.ingest.sources.gdrive import GoogleDrive
from rag.ingest.sources.gdrive_options import GoogleDriveOptions
from rag.ingest.sources.guard import Network
from rag.ingest.sources.notion import Notion, NotionOptions
from rag.ingest.sources.sharepoint import SharePoint
from rag.ingest.sources.sharepoint_options import SharePointOptions
from rag.ingest.sources.website import Website, WebsiteOptions

log = logging.getLogger("candor.sync")


def connector_for(source: SourceConfig, environ: Mapping[str, str]) -> Connector:
    """A connector for `source`, its credentials read from `environ` by name; `SyncError` when its
    settings or credentials are unusable."""
    credentials = resolve_credentials(source, environ)
    network = Network.allowing(source.allow_private_network)
    reaches = network.describe()
    if reaches is not None:
        log.warning("sync %s: allow_private_network is on: this source may reach %s", source.name, reaches)
    if source.kind == "website":
        options = WebsiteOptions.parse(source.options, f"source {source.name!r}")
        return Website(options, access=source.access, credentials=credentials, network=network)
    if source.kind == "confluence":
        confluence = ConfluenceOptions.parse(source.options, f"source {source.name!r}")
        return Confluence(
            confluence,
            name=source.name,
            credentials=credentials,
            variables=source.credentials,
            access=source.access,
            network=network,
        )
    if source.kind == "sharepoint":
        sharepoint = SharePointOptions.parse(source.options, f"source {source.name!r}", access=source.access)
        return SharePoint(
            sharepoint, name=source.name, credentials=credentials, variables=source.credentials, network=network
        )
    if source.kind == "notion":
        notion = NotionOptions.parse(source.options, f"source {source.name!r}")
        return Notion(
            notion,
            name=source.name,
            credentials=credentials,
            variables=source.credentials,
            access=source.access,
            network=network,
        )
    if source.kind == "gdrive":
        gdrive = GoogleDriveOptions.parse(source.options, f"source {source.name!r}")
        return GoogleDrive(
            gdrive,
            name=source.name,
            credentials=credentials,
            variables=source.credentials,
            access=source.access,
            network=network,
        )
    raise SyncError(f"source {source.name!r}: kind {source.kind!r} cannot be synced yet")  # pragma: no cover
