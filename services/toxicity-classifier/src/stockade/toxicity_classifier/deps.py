"""Typed dependencies of the routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from stockade.runtime.app import service_of
from stockade.toxicity_classifier.model import ToxicityModel
from stockade.toxicity_classifier.settings import ToxicityClassifierSettings


def get_model(request: Request) -> ToxicityModel:
    return service_of(request, ToxicityModel)


def get_settings(request: Request) -> ToxicityClassifierSettings:
    settings: ToxicityClassifierSettings = request.app.state.service.settings
    return settings


ModelDep = Annotated[ToxicityModel, Depends(get_model)]
SettingsDep = Annotated[ToxicityClassifierSettings, Depends(get_settings)]
