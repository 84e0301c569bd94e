from rest_framework.routers import DefaultRouter

from conflicts.api.views import ConflictViewSet

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("conflicts", ConflictViewSet, basename="conflict")

urlpatterns = router.urls
