from rest_framework.routers import DefaultRouter

from contexts.api.views import (
    CheckpointViewSet,
    GlobalContextViewSet,
    TaskViewSet,
    VersionViewSet,
)

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("tasks", TaskViewSet, basename="task")
router.register("versions", VersionViewSet, basename="version")
router.register("checkpoints", CheckpointViewSet, basename="checkpoint")
router.register("global-context", GlobalContextViewSet, basename="global-context")

urlpatterns = router.urls
