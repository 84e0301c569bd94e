from django.urls import path

from claims.api.views import ClaimListView

urlpatterns = [
    path("claims/", ClaimListView.as_view(), name="claim-list"),
]
