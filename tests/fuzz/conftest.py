"""The API fixtures (a real uvicorn over the small test store) for the HTTP fuzz cases."""

from tests.api.conftest import api_url, client  # noqa: F401
from tests.services.conftest import api_data  # noqa: F401
