from rest_framework.routers import DefaultRouter

from sessions.api.views import HandoffViewSet, SessionViewSet

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("sessions", SessionViewSet, basename="session")
router.register("handoffs", HandoffViewSet, basename="handoff")

urlpatterns = router.urls
