"""Console URLs, mounted under /admin/ ahead of the admin site's own."""

from django.contrib import admin
from django.urls import path

from console import board_views, pages, views

urlpatterns = [
    path("", admin.site.admin_view(views.index), name="console_index"),
    path("overview.json", admin.site.admin_view(views.overview_json), name="console_overview"),
    path("overview/fragment/", admin.site.admin_view(views.overview_fragment),
         name="console_overview_fragment"),
    path("board.json", admin.site.admin_view(board_views.board_json), name="console_board"),
    path("board/prompt/", admin.site.admin_view(board_views.board_prompt),
         name="console_board_prompt"),
    path("board/act/", admin.site.admin_view(board_views.board_act), name="console_board_act"),
    path("project/", admin.site.admin_view(views.switch_project), name="console_project"),
    path("claims-and-locks/", admin.site.admin_view(pages.claims_page), name="console_claims"),
    path("projects/", admin.site.admin_view(pages.projects_page), name="console_projects"),
]
