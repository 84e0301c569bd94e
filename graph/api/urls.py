from rest_framework.routers import DefaultRouter

from graph.api.views import TaskRelationshipViewSet

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("relationships", TaskRelationshipViewSet, basename="relationship")

urlpatterns = router.urls
