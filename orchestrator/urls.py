from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from orchestrator.web.enroll import EnrollView
from orchestrator.web.health import healthz
from orchestrator.web.metrics import metrics_view
from orchestrator.web.rest import tool_urlpatterns

api_v1 = [
    path("tools/", include(tool_urlpatterns())),
    path("enroll/", EnrollView.as_view(), name="enroll"),
    path("", include("contexts.api.urls")),
    path("", include("sessions.api.urls")),
    path("", include("conflicts.api.urls")),
    path("", include("graph.api.urls")),
    path("", include("claims.api.urls")),
]

urlpatterns = [
    # The address the startup banner prints: the console, not a bare 404.
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False), name="home"),
    path("healthz", healthz, name="healthz"),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("admin/", include("console.urls")),
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="prometheus-django-metrics"),
]

handler404 = "orchestrator.web.api.not_found"
